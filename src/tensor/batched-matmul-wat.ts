// The text of the SIMD kernels of ./batched-matmul.ts, in the WebAssembly text format: a module of its own so
// that it travels wherever the code does (a bundle, the device check's pack), assembled by wabt when the wasm
// backend starts. MEMORY_LIMITS and BLOCK are filled in by ./batched-matmul.ts.
export const BATCHED_MATMUL_WAT = `;; Batched matMuls of small planes with wasm SIMD, bit-exact with tfjs-backend-wasm's BatchMatMul wherever that
;; kernel takes its scalar path (a batch of more than one plane, or a transposed right operand); see
;; ./batched-matmul.ts for why and where they run. That scalar path computes, for every output (i, j),
;;
;;   out = 0;  for each block of 48 along k (BLOCK below, substituted by ./batched-matmul.ts):
;;             s = 0;  s = s + a[i, k]·b[k, j] for k in the block, in order;
;;             out = (out + s) + 0
;;
;; in float32, every product and sum rounded. These kernels compute four outputs j..j+3 at once, one per SIMD
;; lane, each lane with exactly that sequence of float32 operations (wasm has no fused multiply-add, so a
;; product is rounded before it is added, as in the scalar code).
;;
;; Addresses are byte offsets into the backend's memory (imported as env.memory); every tensor is row-major.
;; matmulNT steps k four at a time within a block, so BLOCK must be a multiple of 4 (it is: 48).
;; The loops are written out in each function, the block end min(k0 + BLOCK, K) too: a call inside them made the
;; kernels about 10% slower (the vector accumulators are saved around it).
(module
  (import "env" "memory" (memory 1 MEMORY_LIMITS))

  ;; out[p, i, j] = Σ_k a[p, i, k] · b[p, k, j]      a: [P, M, K], b: [P, K, N], out: [P, M, N];  N % 4 = 0
  (func (export "matmulNN")
    (param $a i32) (param $b i32) (param $out i32) (param $P i32) (param $M i32) (param $K i32) (param $N i32)
    (local $p i32) (local $i i32) (local $j i32) (local $k i32) (local $k0 i32) (local $kEnd i32)
    (local $aRow i32) (local $bCol i32) (local $o v128) (local $s v128)
    (local.set $p (i32.const 0))
    (block $pDone (loop $pLoop
      (br_if $pDone (i32.ge_u (local.get $p) (local.get $P)))
      (local.set $i (i32.const 0))
      (block $iDone (loop $iLoop
        (br_if $iDone (i32.ge_u (local.get $i) (local.get $M)))
        ;; a[p, i, 0]
        (local.set $aRow (i32.add (local.get $a)
          (i32.shl (i32.mul (i32.add (i32.mul (local.get $p) (local.get $M)) (local.get $i)) (local.get $K)) (i32.const 2))))
        (local.set $j (i32.const 0))
        (block $jDone (loop $jLoop
          (br_if $jDone (i32.ge_u (local.get $j) (local.get $N)))
          ;; b[p, 0, j]
          (local.set $bCol (i32.add (local.get $b)
            (i32.shl (i32.add (i32.mul (i32.mul (local.get $p) (local.get $K)) (local.get $N)) (local.get $j)) (i32.const 2))))
          (local.set $o (v128.const f32x4 0 0 0 0))
          (local.set $k0 (i32.const 0))
          (block $blocksDone (loop $blockLoop
            (br_if $blocksDone (i32.ge_u (local.get $k0) (local.get $K)))
            (local.set $kEnd (select (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K)
              (i32.lt_u (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K))))
            (local.set $s (v128.const f32x4 0 0 0 0))
            (local.set $k (local.get $k0))
            (block $kDone (loop $kLoop
              (br_if $kDone (i32.ge_u (local.get $k) (local.get $kEnd)))
              (local.set $s (f32x4.add (local.get $s)
                (f32x4.mul
                  (f32x4.splat (f32.load (i32.add (local.get $aRow) (i32.shl (local.get $k) (i32.const 2)))))
                  (v128.load (i32.add (local.get $bCol) (i32.shl (i32.mul (local.get $k) (local.get $N)) (i32.const 2)))))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $kLoop)))
            (local.set $o (f32x4.add (f32x4.add (local.get $o) (local.get $s)) (v128.const f32x4 0 0 0 0)))
            (local.set $k0 (local.get $kEnd))
            (br $blockLoop)))
          (v128.store
            (i32.add (local.get $out)
              (i32.shl (i32.add (i32.mul (i32.add (i32.mul (local.get $p) (local.get $M)) (local.get $i)) (local.get $N)) (local.get $j)) (i32.const 2)))
            (local.get $o))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $jLoop)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $iLoop)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $pLoop))))

  ;; out[p, i, j] = Σ_k a[p, i, k] · b[p, j, k]      a: [P, M, K], b: [P, N, K], out: [P, M, N];  K % 4 = 0
  ;; Four rows of b at a time, transposed in registers four k at a time, so that lane x accumulates row j + x;
  ;; the last N % 4 rows one at a time, in scalar float32.
  (func (export "matmulNT")
    (param $a i32) (param $b i32) (param $out i32) (param $P i32) (param $M i32) (param $K i32) (param $N i32)
    (local $p i32) (local $i i32) (local $j i32) (local $k i32) (local $k0 i32) (local $kEnd i32)
    (local $aRow i32) (local $bRow i32) (local $rowBytes i32) (local $outRow i32) (local $n4 i32)
    (local $o v128) (local $s v128) (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128) (local $at i32)
    (local $so f32) (local $ss f32)
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (local.set $n4 (i32.and (local.get $N) (i32.const -4)))
    (local.set $p (i32.const 0))
    (block $pDone (loop $pLoop
      (br_if $pDone (i32.ge_u (local.get $p) (local.get $P)))
      (local.set $i (i32.const 0))
      (block $iDone (loop $iLoop
        (br_if $iDone (i32.ge_u (local.get $i) (local.get $M)))
        (local.set $aRow (i32.add (local.get $a)
          (i32.mul (i32.add (i32.mul (local.get $p) (local.get $M)) (local.get $i)) (local.get $rowBytes))))
        (local.set $outRow (i32.add (local.get $out)
          (i32.shl (i32.mul (i32.add (i32.mul (local.get $p) (local.get $M)) (local.get $i)) (local.get $N)) (i32.const 2))))
        ;; Rows j..j+3 of b, four at a time.
        (local.set $j (i32.const 0))
        (block $jDone (loop $jLoop
          (br_if $jDone (i32.ge_u (local.get $j) (local.get $n4)))
          (local.set $bRow (i32.add (local.get $b)
            (i32.mul (i32.add (i32.mul (local.get $p) (local.get $N)) (local.get $j)) (local.get $rowBytes))))
          (local.set $o (v128.const f32x4 0 0 0 0))
          (local.set $k0 (i32.const 0))
          (block $blocksDone (loop $blockLoop
            (br_if $blocksDone (i32.ge_u (local.get $k0) (local.get $K)))
            (local.set $kEnd (select (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K)
              (i32.lt_u (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K))))
            (local.set $s (v128.const f32x4 0 0 0 0))
            (local.set $k (local.get $k0))
            (block $kDone (loop $kLoop
              (br_if $kDone (i32.ge_u (local.get $k) (local.get $kEnd)))
              ;; r_x = b[p, j + x, k..k+3]
              (local.set $at (i32.add (local.get $bRow) (i32.shl (local.get $k) (i32.const 2))))
              (local.set $r0 (v128.load (local.get $at)))
              (local.set $r1 (v128.load (i32.add (local.get $at) (local.get $rowBytes))))
              (local.set $r2 (v128.load (i32.add (local.get $at) (i32.shl (local.get $rowBytes) (i32.const 1)))))
              (local.set $r3 (v128.load (i32.add (local.get $at) (i32.mul (local.get $rowBytes) (i32.const 3)))))
              ;; 4 × 4 transpose: t_c = (r0[c], r1[c], r2[c], r3[c]), the column k + c of the four rows
              (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r0) (local.get $r1)))
              (local.set $t1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r0) (local.get $r1)))
              (local.set $t2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r2) (local.get $r3)))
              (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r2) (local.get $r3)))
              (local.set $r0 (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t2)))
              (local.set $r1 (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t2)))
              (local.set $r2 (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t1) (local.get $t3)))
              (local.set $r3 (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t1) (local.get $t3)))
              ;; s += a[p, i, k + c] · column c, for c = 0..3 in order
              (local.set $at (i32.add (local.get $aRow) (i32.shl (local.get $k) (i32.const 2))))
              (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.splat (f32.load (local.get $at))) (local.get $r0))))
              (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.splat (f32.load offset=4 (local.get $at))) (local.get $r1))))
              (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.splat (f32.load offset=8 (local.get $at))) (local.get $r2))))
              (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.splat (f32.load offset=12 (local.get $at))) (local.get $r3))))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br $kLoop)))
            (local.set $o (f32x4.add (f32x4.add (local.get $o) (local.get $s)) (v128.const f32x4 0 0 0 0)))
            (local.set $k0 (local.get $kEnd))
            (br $blockLoop)))
          (v128.store (i32.add (local.get $outRow) (i32.shl (local.get $j) (i32.const 2))) (local.get $o))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $jLoop)))
        ;; The last N % 4 rows, one at a time.
        (block $tailDone (loop $tailLoop
          (br_if $tailDone (i32.ge_u (local.get $j) (local.get $N)))
          (local.set $bRow (i32.add (local.get $b)
            (i32.mul (i32.add (i32.mul (local.get $p) (local.get $N)) (local.get $j)) (local.get $rowBytes))))
          (local.set $so (f32.const 0))
          (local.set $k0 (i32.const 0))
          (block $blocksDone (loop $blockLoop
            (br_if $blocksDone (i32.ge_u (local.get $k0) (local.get $K)))
            (local.set $kEnd (select (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K)
              (i32.lt_u (i32.add (local.get $k0) (i32.const BLOCK)) (local.get $K))))
            (local.set $ss (f32.const 0))
            (local.set $k (local.get $k0))
            (block $kDone (loop $kLoop
              (br_if $kDone (i32.ge_u (local.get $k) (local.get $kEnd)))
              (local.set $ss (f32.add (local.get $ss)
                (f32.mul (f32.load (i32.add (local.get $aRow) (i32.shl (local.get $k) (i32.const 2))))
                         (f32.load (i32.add (local.get $bRow) (i32.shl (local.get $k) (i32.const 2)))))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $kLoop)))
            (local.set $so (f32.add (f32.add (local.get $so) (local.get $ss)) (f32.const 0)))
            (local.set $k0 (local.get $kEnd))
            (br $blockLoop)))
          (f32.store (i32.add (local.get $outRow) (i32.shl (local.get $j) (i32.const 2))) (local.get $so))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $tailLoop)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $iLoop)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $pLoop))))
)
`;
