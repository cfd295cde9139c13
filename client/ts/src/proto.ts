// The hitbox.v1 and grpc.health.v1 definitions, loaded once from the .proto
// files the build copied beside the code (dist/proto).
//
// The options are the package's, never the caller's: camelCase field names
// (the client's types use the same names, so shapes and poses go to protobufjs
// as they are), uint64 as decimal strings in proto-loader's answers, defaults
// filled in. Requests skip protobufjs's fromObject copy: convert.ts builds
// them with the exact field types, and Type.encode writes them as they are.
// Query and Tick answers are decoded without toObject and converted once
// (convert.ts resultsFromProto), since they carry most of the bytes.
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as protobuf from 'protobufjs';
import type { ProtoGrpcType as HitboxProto } from './gen/hitbox';
import type { ProtoGrpcType as HealthProto } from './gen/health';

/** Where the build put the .proto files (dist/proto beside dist/src). */
export const PROTO_DIR = path.resolve(__dirname, '..', 'proto');

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  arrays: true,
  oneofs: false,
  includeDirs: [PROTO_DIR],
};

// Answers decoded as protobufjs messages (no toObject) for these rpcs.
const RAW_ANSWERS = new Set(['Query', 'Tick']);

let loaded: { hitbox: HitboxProto; health: HealthProto } | undefined;

/** The service constructors (loaded on first use). */
export function protos(): { hitbox: HitboxProto; health: HealthProto } {
  if (!loaded) {
    const defs = protoLoader.loadSync(['hitbox/v1/hitbox.proto', 'grpc/health/v1/health.proto'], LOADER_OPTIONS);
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
    root.loadSync('hitbox/v1/hitbox.proto', { keepCase: false });
    root.resolveAll();
    const service = root.lookupService('hitbox.v1.Hitbox');
    const methods = defs['hitbox.v1.Hitbox'] as protoLoader.ServiceDefinition;
    for (const [name, method] of Object.entries(methods)) {
      const m = service.methods[name];
      const request = root.lookupType(m.requestType);
      const response = root.lookupType(m.responseType);
      const def = method as { requestSerialize: (v: object) => Buffer; responseDeserialize: (b: Buffer) => object };
      def.requestSerialize = (v: object) => {
        const bytes = request.encode(v).finish();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      };
      if (RAW_ANSWERS.has(name)) def.responseDeserialize = (b: Buffer) => response.decode(b);
    }
    const pkg = grpc.loadPackageDefinition(defs) as unknown as HitboxProto & HealthProto;
    loaded = { hitbox: pkg, health: pkg };
  }
  return loaded;
}
