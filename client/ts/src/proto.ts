// The hitbox.v1 and grpc.health.v1 definitions, loaded once from the .proto
// files the build copied beside the code (dist/proto).
//
// The options are the package's, never the caller's: camelCase field names
// (the client's types use the same names, so shapes and poses go to protobufjs
// as they are), uint64 as decimal strings (never a rounded number; converted
// to and from bigint in convert.ts), defaults filled in on answers.
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
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

let loaded: { hitbox: HitboxProto; health: HealthProto } | undefined;

/** The service constructors (loaded on first use). */
export function protos(): { hitbox: HitboxProto; health: HealthProto } {
  if (!loaded) {
    const defs = protoLoader.loadSync(['hitbox/v1/hitbox.proto', 'grpc/health/v1/health.proto'],
      LOADER_OPTIONS);
    const pkg = grpc.loadPackageDefinition(defs) as unknown as HitboxProto & HealthProto;
    loaded = { hitbox: pkg, health: pkg };
  }
  return loaded;
}
