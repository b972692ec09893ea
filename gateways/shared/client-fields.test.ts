import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineError, type GenerateRequest } from '../../engine/api.js';
import { renameEngineError, withClientFields } from './client-fields.js';
import { HttpError } from './http-error.js';

const invalidArgument = (field: string, rule: string) =>
  new EngineError('INVALID_ARGUMENT', `${field}: ${rule}`, field, rule);
const request = (): GenerateRequest => ({ prompt: { kind: 'text', text: 'x' }, params: {} });

function renamed(r: GenerateRequest, err: unknown): { field?: string; message: string } {
  const out = renameEngineError(r, err);
  assert.ok(out instanceof HttpError, String(out));
  return { field: out.field, message: out.message };
}

test("an engine field under a renamed root becomes the client's, with the rule kept", () => {
  const r = withClientFields(request(), [
    ['constraint.schema', 'response_format.json_schema.schema'],
    ['constraint', 'response_format'],
  ]);
  withClientFields(r, [['prompt.tools[1].parameters', 'tools[1].function.parameters']]);
  assert.deepEqual(
    renamed(r, invalidArgument('constraint.schema.properties.a', 'is not valid JSON Schema')),
    {
      field: 'response_format.json_schema.schema.properties.a',
      message: 'response_format.json_schema.schema.properties.a: is not valid JSON Schema',
    },
  );
  assert.equal(
    renamed(r, invalidArgument('constraint', 'the grammar does not compile')).field,
    'response_format',
  );
  assert.equal(
    renamed(r, invalidArgument('prompt.tools[1].parameters.anyOf[0]', 'x')).field,
    'tools[1].function.parameters.anyOf[0]',
  );
});

test('other fields, other codes and requests without renames pass unchanged', () => {
  const r = withClientFields(request(), [['constraint', 'guided_regex']]);
  for (const err of [
    invalidArgument('constraintx', 'not under the root'),
    invalidArgument('prompt.tools', 'the forced tool call'),
    new EngineError('UNIMPLEMENTED', 'constraint: not built', 'constraint'),
    new Error('not an engine error'),
  ])
    assert.equal(renameEngineError(r, err), err);
  const plain = invalidArgument('constraint', 'x');
  assert.equal(renameEngineError(request(), plain), plain);
});
