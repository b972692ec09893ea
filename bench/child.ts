/**
 * The servers a benchmark starts, each in its own process (the machine has 2 cores: they run
 * one after the other, never together): start one and wait for the line that says where it
 * listens; stop it and wait for it to exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '../engine/default-model.js';

/** Starts `cmd args` in the project root; resolves with the match of `pattern` in its output. */
export function startChild(
  cmd: string,
  args: readonly string[],
  pattern: RegExp,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(cmd, args, { cwd: projectRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = out.match(pattern);
      if (m) resolve({ child, match: m });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${out.slice(-2000)}`)),
    );
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}
