import { describe, expect, it } from 'vitest';
import { pushAcceptedSchema, success } from '../../telemetry/envelope.js';
import { acceptedBody } from './answer.js';

describe('the 202 body', () => {
  it('when every record was taken, is the text JSON.stringify gives the envelope, and reads as the published schema', () => {
    for (const deliveryId of ['6f1c7f0e-2b7a-4c8e-9a52-1f0f3f1e9b10', 'idem_0123456789abcdef', 'odd "id" \\ é']) {
      for (const accepted of [0, 1, 1000]) {
        const text = acceptedBody(deliveryId, accepted, accepted, []);
        expect(text).toBe(JSON.stringify(success({ deliveryId, accepted, rejected: [] }, `accepted ${accepted} record(s)`)));
        expect(pushAcceptedSchema.safeParse(JSON.parse(text)).success).toBe(true);
      }
    }
  });
});
