// The generated (src/gen, made at build time) wire types the package uses.
export type { Aabb__Output } from './gen/hitbox/v1/Aabb';
export type { ApplyChangesResponse__Output } from './gen/hitbox/v1/ApplyChangesResponse';
export type { Collider, Collider__Output } from './gen/hitbox/v1/Collider';
export type { ColliderChange } from './gen/hitbox/v1/ColliderChange';
export type { CreateSessionRequest } from './gen/hitbox/v1/CreateSessionRequest';
export type { MapInfo__Output } from './gen/hitbox/v1/MapInfo';
export type { Query } from './gen/hitbox/v1/Query';
export type { QueryFilter } from './gen/hitbox/v1/QueryFilter';
export type { QueryResult__Output } from './gen/hitbox/v1/QueryResult';
export type { SessionInfo__Output } from './gen/hitbox/v1/SessionInfo';
export type { SessionLimits, SessionLimits__Output } from './gen/hitbox/v1/SessionLimits';
export type { TickRequest } from './gen/hitbox/v1/TickRequest';
export type { TickResponse__Output } from './gen/hitbox/v1/TickResponse';
export type { GetCollidersResponse__Output } from './gen/hitbox/v1/GetCollidersResponse';
export type { ListMapsResponse__Output } from './gen/hitbox/v1/ListMapsResponse';
export type { ListSessionsResponse__Output } from './gen/hitbox/v1/ListSessionsResponse';
export type { QueryResponse__Output } from './gen/hitbox/v1/QueryResponse';
