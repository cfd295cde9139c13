// Every failure of a call, a tick or a stream is thrown as a HitboxError
// carrying the gRPC code and the server's message unchanged (the message
// names the field, e.g. "changes[2].add.shape.sphere.radius ...").

/** gRPC status codes (the same numbers as the C++ client's RpcCode). */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

const names: string[] = [];
for (const [name, value] of Object.entries(Code)) names[value] = name;

/** "NOT_FOUND" for 5, ...; "CODE_<n>" for numbers outside the table. */
export function codeName(code: number): string {
  return names[code] ?? `CODE_${code}`;
}

/** A failed call, tick or stream: `code` and the server's `details`. */
export class HitboxError extends Error {
  /** The gRPC status code. */
  readonly code: number;
  /** The server's (or the client's) message, unchanged. */
  readonly details: string;

  constructor(code: number, details: string) {
    super(`${codeName(code)}: ${details}`);
    this.name = 'HitboxError';
    this.code = code;
    this.details = details;
  }
}

/** A HitboxError from a grpc-js error (a ServiceError or anything thrown). */
export function fromGrpcError(err: unknown): HitboxError {
  if (err instanceof HitboxError) return err;
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  if (typeof e?.code === 'number') {
    return new HitboxError(e.code, typeof e.details === 'string' ? e.details : String(e.message));
  }
  return new HitboxError(Code.UNKNOWN, String(e?.message ?? err));
}
