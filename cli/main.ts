#!/usr/bin/env node
/**
 * `prism` command line: a dispatcher. Each subcommand lives in its own module (cli/<name>.ts)
 * exporting `run(argv: string[]): Promise<number>` (the exit code) and `help: string`.
 */
const commands: Record<
  string,
  { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number>; help: string }> }
> = {
  generate: {
    summary: 'generate text with a model, streamed to stdout',
    load: () => import('./generate.js'),
  },
  engine: { summary: 'run the engine alone (gRPC)', load: () => import('./engine.js') },
  serve: { summary: 'run the engine and the HTTP gateways', load: () => import('./serve.js') },
  gateway: { summary: 'run the HTTP gateways against running engines', load: () => import('./gateway.js') },
};

function usage(): string {
  const lines = ['usage: prism <command> [options]', '', 'commands:'];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(10)} ${c.summary}`);
  lines.push('', 'Run `prism <command> --help` for the options of a command.');
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`prism: unknown command '${name}'\n\n${usage()}\n`);
    return 2;
  }
  const module = await command.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(module.help + '\n');
    return 0;
  }
  return module.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`prism: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
