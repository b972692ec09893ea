import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceError } from '@grpc/grpc-js';
import { EngineError, invalidArgument } from './errors.js';
import { fromGrpcError, toGrpcStatus } from './grpc-status.js';

/** What the client sees of the status the server sent. */
function roundTrip(err: EngineError): EngineError {
  const s = toGrpcStatus(err);
  return fromGrpcError({ code: s.code, details: s.details, metadata: s.metadata } as ServiceError);
}

test('an error keeps its code, field and rule over gRPC', () => {
  const back = roundTrip(invalidArgument('params.top_p', 'must be in (0, 1]'));
  assert.deepEqual(
    [back.code, back.field, back.rule, back.message],
    ['INVALID_ARGUMENT', 'params.top_p', 'must be in (0, 1]', 'params.top_p: must be in (0, 1]'],
  );
});

test('a field or rule that is not printable ASCII (a schema property 名前, a newline) crosses too', () => {
  const err = invalidArgument('constraint.schema.properties.名前.type', "unknown type 'strin'\nof 名前");
  const back = roundTrip(err);
  assert.equal(back.field, err.field);
  assert.equal(back.rule, err.rule);
  assert.equal(back.code, 'INVALID_ARGUMENT');
});
