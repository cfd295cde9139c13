// Build step before tsc: TypeScript types of the .proto files (src/gen, by
// @grpc/proto-loader's generator, with the options src/proto.ts loads them
// with) and a copy of the .proto files the package loads at run time
// (dist/proto). Both are build outputs, never checked in.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const root = path.resolve(__dirname, '..');
const protoRoot = path.resolve(root, '../../proto');
const files = ['hitbox/v1/hitbox.proto', 'grpc/health/v1/health.proto'];

const out = path.join(root, 'dist/proto');
const gen = path.join(root, 'src/gen');
const dirs = ['hitbox/v1', 'grpc/health/v1'];

// Nothing to do when the outputs are newer than every .proto file and this script.
const stamp = path.join(gen, '.stamp');
const mtime = (f) => fs.statSync(f).mtimeMs;
const inputs = [__filename, ...dirs.flatMap((d) => fs.readdirSync(path.join(protoRoot, d))
  .filter((f) => f.endsWith('.proto')).map((f) => path.join(protoRoot, d, f)))];
if (fs.existsSync(stamp) && fs.existsSync(out) && inputs.every((f) => mtime(f) <= mtime(stamp))) process.exit(0);

fs.rmSync(out, { recursive: true, force: true });
for (const dir of dirs) {
  fs.mkdirSync(path.join(out, dir), { recursive: true });
  for (const f of fs.readdirSync(path.join(protoRoot, dir))) {
    if (f.endsWith('.proto')) fs.copyFileSync(path.join(protoRoot, dir, f), path.join(out, dir, f));
  }
}

fs.rmSync(gen, { recursive: true, force: true });
const bin = require.resolve('@grpc/proto-loader/build/bin/proto-loader-gen-types.js');
execFileSync(process.execPath, [bin, '--longs=String', '--enums=String', '--defaults',
  '--grpcLib=@grpc/grpc-js', '-I', out, '-O', gen, ...files],
  { stdio: 'inherit' });
fs.writeFileSync(stamp, '');
