/** Types of scripts/check-comment-paths.mjs for its test. */
export interface TrackedFiles {
  readonly files: ReadonlySet<string>;
  readonly dirs: ReadonlySet<string>;
  readonly list: readonly string[];
}
export function commentLines(text: string, ext: string): string[];
export function missingCitations(
  comment: string,
  file: string,
  tracked: TrackedFiles,
  basenames: ReadonlySet<string>,
  root: string,
): string[];
export function trackedFiles(root: string): TrackedFiles;
export function findDanglingCitations(root: string): string[];
