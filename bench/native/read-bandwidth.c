// The machine's read ceiling for bench/memory-read.bench.ts: T threads each sum their share of an f32 array
// (vectorized by -O3 -ffast-math -march=native), the array far beyond the caches. Prints one JSON line:
// {"threads":T,"bytes":B,"gbps":[...one per timed pass...]}. Usage: read-bandwidth FLOATS THREADS PASSES
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static float *data;
static size_t n_floats;
static int n_threads;
static pthread_barrier_t start_barrier, end_barrier;
static volatile float sink[64];
static int passes;

// 32 independent partial sums (four 8-wide vectors), so the adds' latency does not bound one thread's reads.
static float sum_range(const float *a, size_t n) {
  float s[32] = {0};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 32; j++) s[j] += a[i + j];
  float total = 0.f;
  for (; i < n; i++) total += a[i];
  for (int j = 0; j < 32; j++) total += s[j];
  return total;
}

static void *worker(void *arg) {
  long t = (long)arg;
  size_t per = n_floats / n_threads;
  const float *a = data + per * t;
  for (int p = 0; p < passes + 1; p++) {
    pthread_barrier_wait(&start_barrier);
    sink[t] += sum_range(a, per);
    pthread_barrier_wait(&end_barrier);
  }
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s FLOATS THREADS PASSES\n", argv[0]);
    return 2;
  }
  n_floats = strtoull(argv[1], NULL, 10);
  n_threads = atoi(argv[2]);
  passes = atoi(argv[3]);
  if (n_threads < 1 || n_threads > 64 || passes < 1 || n_floats < (size_t)n_threads) return 2;
  data = malloc(n_floats * sizeof(float));
  if (!data) return 3;
  for (size_t i = 0; i < n_floats; i++) data[i] = (float)(i % 1000) * 0.001f;
  pthread_barrier_init(&start_barrier, NULL, n_threads + 1);
  pthread_barrier_init(&end_barrier, NULL, n_threads + 1);
  pthread_t th[64];
  for (long t = 0; t < n_threads; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  size_t bytes = (n_floats / n_threads) * n_threads * sizeof(float);
  printf("{\"threads\":%d,\"bytes\":%zu,\"gbps\":[", n_threads, bytes);
  for (int p = 0; p < passes + 1; p++) {
    double t0 = now();
    pthread_barrier_wait(&start_barrier);
    pthread_barrier_wait(&end_barrier);
    double s = now() - t0;
    if (p > 0) printf("%s%.3f", p > 1 ? "," : "", bytes / s / 1e9);  // pass 0 warms up
  }
  printf("]}\n");
  for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
  return 0;
}
