/**
 * The import rules of the project's own TypeScript (`npm run lint` runs them through
 * dependency-cruiser; scripts/lint-rules.test.ts plants a violation of each and
 * expects it to fail). Folders, not file lists, so a new gateway family, engine feature or
 * test lands under the rules without an edit here. Type-only imports count: a type is a
 * dependency too.
 *
 * The floors, bottom up: native/ (the compute core's declarations) <- engine/ <- config/ <-
 * gateways/ <- cli/ (where processes are put together); bench/, test/ and scripts/ may use any
 * of them, and nothing in production uses those.
 */

/** An engine feature: plugs into the core through the engine's RequestExtension interface. */
const FEATURE = '^engine/(structured|speculative|kv-transfer|beam|pooling|vision)/';
/**
 * The engine's core: its top-level files (the step loop, intake, output processing, scheduler,
 * runner, sequences, ...). Not core: the public door (api.ts) and the files that put an engine
 * together from its options (load-engine.ts, options.ts, and request-features.ts, the one list
 * of the request extensions and their order), which name the features by design.
 */
const CORE = '^engine/[^/]+[.]ts$';
const CORE_NOT = ['^engine/(api|load-engine|options|request-features)[.]ts$', '[.]test[.]ts$'];
/**
 * Test and benchmark code (tests, the test/ tree, `testing/` folders and `test-*.ts` helpers,
 * bench/): never imported by production code, and free of the floors below.
 */
const TEST_OR_BENCH = ['[.]test[.]ts$', '(^|/)test/', '(^|/)testing/', '(^|/)test-[^/]+[.]ts$', '^bench/'];
const PRODUCTION = '^(engine|gateways|cli|native|config)/';
/** The floors, bottom up: no production file imports a floor above its own (tests may use any). */
const FLOORS = ['native', 'engine', 'config', 'gateways', 'cli'];
const FLOOR_RULES = FLOORS.slice(1).map((floor, i) => ({
  name: `floors-${floor}`,
  comment: `No floor below ${floor}/ imports it.`,
  severity: 'error',
  from: { path: `^(${FLOORS.slice(0, i + 1).join('|')})/`, pathNot: TEST_OR_BENCH },
  to: { path: `^${floor}/` },
}));
/** The ground floor of the engine's API: imports nothing but the rest of it. */
const GROUND_FLOOR = '^engine/(types|errors|pd-types)[.]ts$';
/**
 * What cli/ may import of the engine besides engine/api.ts: the entry points that make a
 * process (loading, options and the defaults behind its flags, the gRPC server and client, the
 * split prefill/decode coordinator).
 */
const CLI_ENGINE_ENTRIES = [
  '^engine/api[.]ts$',
  '^engine/(load-engine|options|default-model|memory)[.]ts$',
  '^engine/[^/]+/options[.]ts$',
  '^engine/service/(server|client|listen-address)[.]ts$',
  '^engine/kv-transfer/coordinator[.]ts$',
];

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle anywhere (type-only imports included).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'gateways-through-engine-api',
      comment:
        'gateways/ reaches the engine only through engine/api.ts (and never native/ or the generated gRPC code).',
      severity: 'error',
      from: { path: '^gateways/' },
      to: { path: '^(engine|native|gen)/', pathNot: '^engine/api[.]ts$' },
    },
    {
      name: 'cli-through-engine-entries',
      comment: 'cli/ imports engine/api.ts and the engine entry points that make a process, nothing inside.',
      severity: 'error',
      from: { path: '^cli/' },
      to: { path: '^engine/', pathNot: CLI_ENGINE_ENTRIES },
    },
    {
      name: 'core-not-feature',
      comment:
        'The engine core names no feature: structured output, speculation, split prefill/decode, beam search, pooling and images plug in through the RequestExtension interface.',
      severity: 'error',
      from: { path: CORE, pathNot: CORE_NOT },
      to: { path: FEATURE },
    },
    {
      name: 'engine-not-service-layer',
      comment: 'Only engine/service/ (the gRPC layer) imports engine/service/; it sits above the engine.',
      severity: 'error',
      from: { path: '^engine/', pathNot: ['^engine/service/', '^engine/api[.]ts$', '[.]test[.]ts$'] },
      to: { path: '^engine/service/' },
    },
    {
      name: 'ground-floor',
      comment: 'engine/types.ts, errors.ts and pd-types.ts import nothing above them.',
      severity: 'error',
      from: { path: GROUND_FLOOR },
      to: { pathNot: GROUND_FLOOR },
    },
    ...FLOOR_RULES,
    {
      name: 'no-test-or-bench-in-production',
      comment: 'Production code imports no test, test helper or benchmark code.',
      severity: 'error',
      from: { path: PRODUCTION, pathNot: TEST_OR_BENCH },
      to: { path: TEST_OR_BENCH },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|build|models|native/third_party)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
