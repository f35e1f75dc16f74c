// llama.cpp through node-llama-cpp (optional): installed or not, which build loads, which GPU types it offers.
import { LLAMA_CPP_INSTALL, loadNodeLlamaCpp, openLlama } from '../llama-cpp/binding.js';
import { type CheckResult, type DoctorOptions, firstLine } from './types.js';

export async function checkLlamaCpp(options: Pick<DoctorOptions, 'rolloutEngine'>): Promise<CheckResult> {
  const needed = options.rolloutEngine === 'llama.cpp';
  let mod;
  try {
    mod = await loadNodeLlamaCpp();
  } catch {
    return {
      check: 'llama.cpp',
      status: needed ? 'fail' : 'info',
      detail: 'node-llama-cpp: not installed (optional; needed for --rollout-engine llama.cpp and the llama.cpp parity tests)',
      fix: `${LLAMA_CPP_INSTALL.cpuOnly}  (CPU only)  or  ${LLAMA_CPP_INSTALL.full}  (with GPU builds)`,
    };
  }
  try {
    const version = await mod.getModuleVersion();
    const supported = (await mod.getLlamaGpuTypes('supported')).map((g) => g || 'cpu');
    const llama = await openLlama();
    const devices = llama.gpu ? await llama.getGpuDeviceNames() : [];
    return {
      check: 'llama.cpp',
      status: 'ok',
      detail: `node-llama-cpp ${version}: ${llama.buildType} ${llama.gpu || 'cpu'} build loads${devices.length > 0 ? ` on ${devices.join(', ')}` : ''}; build types for this machine: ${supported.join(', ')}`,
    };
  } catch (err) {
    return { check: 'llama.cpp', status: needed ? 'fail' : 'warn', detail: `node-llama-cpp is installed but no build loads: ${firstLine(err)}`, fix: `reinstall: ${LLAMA_CPP_INSTALL.full}` };
  }
}
