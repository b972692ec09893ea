/**
 * The engine's role (MindIE's PD roles, vLLM's kv_role): what kinds of request it takes.
 *
 * | role    | whole requests | prefill half (remoteDecode) | decode half (handed off, remotePrefill) |
 * |---------|----------------|-----------------------------|-----------------------------------------|
 * | mixed   | yes            | yes                         | yes                                     |
 * | prefill | no             | yes                         | no                                      |
 * | decode  | no             | no                          | yes                                     |
 *
 * A role change applies to new requests at once (the refused kinds get UNAVAILABLE, so a pool
 * or coordinator tries another engine); requests already running that the new role refuses
 * run to their end, and while they do the status reports `RoleSwitching`, then `RoleReady`.
 * A second change while one is under way is refused (MindIE: "status is switching").
 */
import { EngineError } from '../errors.js';
import { ENGINE_ROLES, type EngineRole, type RoleState } from '../pd-types.js';

export type RequestKind = 'whole' | 'prefill' | 'decode';

const TAKES: Record<EngineRole, ReadonlySet<RequestKind>> = {
  mixed: new Set(['whole', 'prefill', 'decode']),
  prefill: new Set(['prefill']),
  decode: new Set(['decode']),
};

const HOW: Record<RequestKind, string> = {
  whole: 'a whole request',
  prefill: 'a prefill for a remote decode',
  decode: 'the decode half of a split request',
};

export function parseRole(text: string, field = 'role'): EngineRole {
  const role = ENGINE_ROLES.find((r) => r === text);
  if (!role)
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${field}: must be one of ${ENGINE_ROLES.join(', ')}, got '${text}'`,
      field,
    );
  return role;
}

export class Roles {
  private current: EngineRole;

  constructor(role: EngineRole = 'mixed') {
    this.current = role;
  }

  get role(): EngineRole {
    return this.current;
  }

  /** RoleSwitching while a live request (of `kinds`) is of a kind the role refuses. */
  stateWith(kinds: Iterable<RequestKind>): RoleState {
    const takes = TAKES[this.current];
    for (const k of kinds) if (!takes.has(k)) return { role: this.current, status: 'RoleSwitching' };
    return { role: this.current, status: 'RoleReady' };
  }

  /** Throws UNAVAILABLE when the role does not take this kind of request. */
  check(kind: RequestKind): void {
    if (!TAKES[this.current].has(kind))
      throw new EngineError(
        'UNAVAILABLE',
        `this engine's role is ${this.current}: it does not take ${HOW[kind]}`,
        'kv_transfer',
      );
  }

  /** Assigns a role; refused while the previous change still drains (`kinds`: the live requests). */
  set(role: EngineRole, kinds: Iterable<RequestKind>): void {
    if (role !== this.current && this.stateWith(kinds).status === 'RoleSwitching')
      throw new EngineError('UNAVAILABLE', "Can't assign DMI role because status is switching.");
    this.current = role;
  }
}
