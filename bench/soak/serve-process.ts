/**
 * Starts `prism serve` (or `prism gateway`) as a child process on free ports (what the soak CI
 * tests and `npm run soak` drive): the real command line, so RSS and fds are the server's own.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly managementUrl: string;
  readonly pid: number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** Resolves once the server has written a stderr line matching `pattern` (e.g. "draining"). */
  waitForLog(pattern: RegExp): Promise<void>;
  /** The exit code, once the process has exited (by itself or after stop()). */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then the exit code (SIGKILL after `ms`). */
  stop(ms?: number): Promise<number | null>;
}

export function startServeProcess(
  extraArgs: readonly string[] = [],
  timeoutMs = 120000,
  command: 'serve' | 'gateway' = 'serve',
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'cli/main.ts',
      command,
      '--port',
      '0',
      '--management-port',
      '0',
      '--metrics-port',
      '0',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`prism ${command} did not start within ${timeoutMs} ms:\n${err}`));
    }, timeoutMs);
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const service = /service listener on (\S+)/.exec(err)?.[1];
      const management = /management listener on (\S+)/.exec(err)?.[1];
      if (service && management && timer) {
        clearTimeout(timer);
        resolve({
          child,
          url: service,
          managementUrl: management,
          pid: child.pid!,
          stderr: () => err,
          exited,
          waitForLog: (pattern) =>
            new Promise<void>((found) => {
              if (pattern.test(err)) return found();
              const onData = (): void => {
                if (!pattern.test(err)) return;
                child.stderr!.off('data', onData);
                found();
              };
              child.stderr!.on('data', onData);
            }),
          stop: async (ms = 30000) => {
            child.kill('SIGTERM');
            const kill = setTimeout(() => child.kill('SIGKILL'), ms);
            const code = await exited;
            clearTimeout(kill);
            return code;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`prism ${command} exited with ${code} before listening:\n${err}`));
    });
  });
}
