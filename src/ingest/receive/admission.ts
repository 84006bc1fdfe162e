import { PushRefused } from './answer.js';
import type { PushCheck } from './delivery.js';

/** The load-shedding gate; the real one is queue/shedding.ts's LoadShedding. */
export interface AdmissionGate {
  state(): { open: true } | { open: false; status: 429 | 503; reason: string; retryAfterSeconds: number };
}

/** Sheds pushes before their body is read, while the queue or Redis memory is over its bound. */
export function admit(gate: AdmissionGate): PushCheck {
  return () => {
    const s = gate.state();
    if (!s.open) throw new PushRefused(s.status, 'overloaded', s.reason, s.retryAfterSeconds);
  };
}
