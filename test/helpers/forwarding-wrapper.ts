// A process that runs `node -e SCRIPT` through malloc-relaunch's forwardAndEnd, as bin/sesa-train.mjs runs its
// restarted self (test/malloc-relaunch.test.ts sends it signals). Usage: tsx forwarding-wrapper.ts SCRIPT
import { forwardAndEnd } from '../../src/cli/malloc-relaunch.js';

const script = process.argv[2];
if (script === undefined) throw new Error('forwarding-wrapper: give the child script as the first argument');
await forwardAndEnd(process.execPath, ['-e', script], process.env);
