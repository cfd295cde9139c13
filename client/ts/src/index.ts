// @hitbox/client: the TypeScript client of the Hitbox collision service.
export { Client, Rewound } from './client';
export type { CallOptions, ClientOptions, RetryPolicy, TlsOptions } from './client';
export { ClientPool, fnv1a64, rendezvousPick, rendezvousScore, splitMix64 } from './client_pool';
export { TickStream } from './tick_stream';
export type { TickStreamOptions } from './tick_stream';
export { Code, HitboxError, codeName } from './errors';
export { Changes, Shapes, pose, vec3 } from './types';
export type * from './types';
