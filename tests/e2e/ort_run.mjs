// Runs an ONNX model with ONNX Runtime (CPU, onnxruntime-node) on .npy inputs and writes each
// output as OUT_DIR/<output name>.npy ('/' and ':' in names replaced by '_', as `trtutils run`
// does). The reference side of the e2e tests and the ResNet-50 benchmark.
//
//   node ort_run.mjs MODEL.onnx OUT_DIR NAME=FILE.npy ... [options]
//     --opt LEVEL        graphOptimizationLevel: disabled | basic | extended | all (default basic,
//                        or $ORT_OPT_LEVEL)
//     --threads N        intraOpNumThreads (default $ORT_NUM_THREADS, else $OMP_NUM_THREADS,
//                        else ORT's default); interOpNumThreads is 1
//     --iterations N     time N runs after the warmup and print median/mean/p90/p99/min in ms
//     --warmup N         untimed runs before timing (default 3 when --iterations is given)
//     --profile PREFIX   ORT's own profiler (enableProfiling): per-node times of every run
//                        written to PREFIX_<date>.json; its path is printed at the end
//
// OUT_DIR may be '-' to skip writing outputs (benchmarking). No dependencies besides
// onnxruntime-node: the .npy reader/writer is below.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

// numpy descr (without byte order) <-> ORT tensor type and typed array.
const DTYPES = [
  { descr: 'f4', ort: 'float32', Array: Float32Array },
  { descr: 'f8', ort: 'float64', Array: Float64Array },
  { descr: 'f2', ort: 'float16', Array: Uint16Array },
  { descr: 'i1', ort: 'int8', Array: Int8Array },
  { descr: 'u1', ort: 'uint8', Array: Uint8Array },
  { descr: 'i2', ort: 'int16', Array: Int16Array },
  { descr: 'u2', ort: 'uint16', Array: Uint16Array },
  { descr: 'i4', ort: 'int32', Array: Int32Array },
  { descr: 'u4', ort: 'uint32', Array: Uint32Array },
  { descr: 'i8', ort: 'int64', Array: BigInt64Array },
  { descr: 'u8', ort: 'uint64', Array: BigUint64Array },
  { descr: 'b1', ort: 'bool', Array: Uint8Array },
];

function fail(msg) {
  process.stderr.write(`ort_run.mjs: ${msg}\n`);
  process.exit(1);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    fail(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  let headerLen;
  let offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    fail(`${file}: unsupported .npy version ${major}`);
  }
  const header = buf.toString('latin1', offset, offset + headerLen);
  const descrM = header.match(/'descr'\s*:\s*'([<>|=])([a-z]\d+)'/);
  const fortranM = header.match(/'fortran_order'\s*:\s*(True|False)/);
  const shapeM = header.match(/'shape'\s*:\s*\(([^)]*)\)/);
  if (!descrM || !fortranM || !shapeM) fail(`${file}: cannot parse header ${header}`);
  if (fortranM[1] === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const dt = DTYPES.find((d) => d.descr === descrM[2]);
  if (!dt) fail(`${file}: unsupported dtype ${descrM[1]}${descrM[2]}`);
  const itemBytes = dt.Array.BYTES_PER_ELEMENT;
  if (descrM[1] === '>' && itemBytes > 1) fail(`${file}: big-endian data is not supported`);
  const dims = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const numel = dims.reduce((a, b) => a * b, 1);
  const start = offset + headerLen;
  if (buf.length - start !== numel * itemBytes) {
    fail(`${file}: expected ${numel * itemBytes} data bytes, found ${buf.length - start}`);
  }
  // Copy into a fresh (aligned) ArrayBuffer.
  const data = new dt.Array(numel);
  new Uint8Array(data.buffer).set(buf.subarray(start));
  return new ort.Tensor(dt.ort, data, dims);
}

function writeNpy(file, tensor) {
  const dt = DTYPES.find((d) => d.ort === tensor.type);
  if (!dt) fail(`output type ${tensor.type} has no .npy mapping`);
  const order = dt.Array.BYTES_PER_ELEMENT === 1 ? '|' : '<';
  const dims = tensor.dims;
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${order}${dt.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre[0] = 0x93;
  pre.write('NUMPY', 1, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

function percentile(sorted, p) {
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

async function main() {
  const args = process.argv.slice(2);
  const positional = [];
  let opt = process.env.ORT_OPT_LEVEL || 'basic';
  let threads = Number(process.env.ORT_NUM_THREADS || process.env.OMP_NUM_THREADS || 0);
  let iterations = 0;
  let warmup = -1;
  let profile = '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const next = () => {
      if (i + 1 >= args.length) fail(`${a} needs a value`);
      return args[++i];
    };
    if (a === '--opt') opt = next();
    else if (a === '--threads') threads = Number(next());
    else if (a === '--iterations') iterations = Number(next());
    else if (a === '--warmup') warmup = Number(next());
    else if (a === '--profile') profile = next();
    else if (a.startsWith('--')) fail(`unknown option ${a}`);
    else positional.push(a);
  }
  if (positional.length < 2) {
    fail('usage: node ort_run.mjs MODEL.onnx OUT_DIR NAME=FILE.npy ... ' +
         '[--opt LEVEL] [--threads N] [--iterations N --warmup N]');
  }
  if (!['disabled', 'basic', 'extended', 'all'].includes(opt)) fail(`bad --opt ${opt}`);
  if (warmup < 0) warmup = iterations > 0 ? 3 : 0;
  const [modelPath, outDir, ...feedArgs] = positional;

  const options = { graphOptimizationLevel: opt, executionProviders: ['cpu'], interOpNumThreads: 1 };
  if (threads > 0) options.intraOpNumThreads = threads;
  if (profile) Object.assign(options, { enableProfiling: true, profileFilePrefix: profile });
  const session = await ort.InferenceSession.create(modelPath, options);

  const feeds = {};
  for (const f of feedArgs) {
    const eq = f.indexOf('=');
    if (eq <= 0) fail(`input '${f}' is not NAME=FILE.npy`);
    const name = f.slice(0, eq);
    if (!session.inputNames.includes(name)) {
      fail(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    }
    feeds[name] = readNpy(f.slice(eq + 1));
  }
  for (const n of session.inputNames) {
    if (!(n in feeds)) fail(`missing input '${n}' (give ${n}=FILE.npy)`);
  }

  for (let i = 0; i < warmup; i++) await session.run(feeds);
  let results;
  if (iterations > 0) {
    const times = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const s = [...times].sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    console.log(`ort: iterations=${iterations} warmup=${warmup} threads=${threads || 'default'} ` +
                `opt=${opt}`);
    console.log(`ort: median_ms=${median.toFixed(3)} mean_ms=${mean.toFixed(3)} ` +
                `p90_ms=${percentile(s, 90).toFixed(3)} p99_ms=${percentile(s, 99).toFixed(3)} ` +
                `min_ms=${s[0].toFixed(3)}`);
  } else {
    results = await session.run(feeds);
  }

  if (outDir !== '-') {
    fs.mkdirSync(outDir, { recursive: true });
    for (const name of session.outputNames) {
      const file = path.join(outDir, `${name.replace(/[/:]/g, '_')}.npy`);
      writeNpy(file, results[name]);
    }
  }
  if (profile) {
    session.endProfiling();  // writes PREFIX_<date>.json (node returns no name)
    console.log(`ort: profile written to ${profile}_*.json`);
  }
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
