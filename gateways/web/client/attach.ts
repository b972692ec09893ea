/**
 * The composer's images: the "Attach image" button (a file input behind it), files dropped on
 * the composer or pasted into the prompt, each read as a `data:` URL and shown as a thumbnail
 * with a remove button until the message is sent. Offered only while the page is in chat mode
 * on a model that takes images; otherwise the button is disabled or hidden, with the reason.
 */
import { formatBytes, imageRefusal, IMAGE_TYPES, MAX_IMAGES } from './image-files.js';

export interface AttachElements {
  /** Holds the button and its help text; hidden outside chat mode. */
  group: HTMLElement;
  button: HTMLButtonElement;
  input: HTMLInputElement;
  help: HTMLElement;
  /** The pending images' thumbnails. */
  list: HTMLUListElement;
  /** Where files may be dropped. */
  dropZone: HTMLElement;
  /** Where images may be pasted. */
  prompt: HTMLTextAreaElement;
}

export interface AttachHooks {
  /** A refused file, or one that could not be read: the page's error line. */
  onError: (message: string) => void;
  /** Images already in the conversation, which the next request sends too. */
  sentImages: () => number;
}

interface Pending {
  name: string;
  url: string;
}

/** What the attach control offers now: images up to `maxBytes`, or nothing, for `reason`. */
export type AttachState =
  { kind: 'images'; maxBytes: number } | { kind: 'no-images'; reason: string } | { kind: 'hidden' };

function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error ?? new Error('could not be read'));
    reader.readAsDataURL(file);
  });
}

export class Attachments {
  private pending: Pending[] = [];
  private state: AttachState = { kind: 'no-images', reason: 'reading the model list…' };

  constructor(
    private readonly el: AttachElements,
    private readonly hooks: AttachHooks,
  ) {
    el.input.accept = IMAGE_TYPES.join(',');
    el.button.addEventListener('click', () => el.input.click());
    el.input.addEventListener('change', () => {
      const files = [...(el.input.files ?? [])];
      el.input.value = '';
      void this.add(files);
    });
    el.dropZone.addEventListener('dragover', (e) => {
      if (!e.dataTransfer?.types.includes('Files')) return;
      e.preventDefault();
      const taken = this.state.kind === 'images';
      e.dataTransfer.dropEffect = taken ? 'copy' : 'none';
      el.dropZone.classList.toggle('dropping', taken);
    });
    el.dropZone.addEventListener('dragleave', (e) => {
      if (!el.dropZone.contains(e.relatedTarget as Node | null)) el.dropZone.classList.remove('dropping');
    });
    el.dropZone.addEventListener('drop', (e) => {
      el.dropZone.classList.remove('dropping');
      const files = [...(e.dataTransfer?.files ?? [])];
      if (files.length === 0) return;
      e.preventDefault(); // the browser would otherwise open the file in place of the page
      void this.add(files);
    });
    el.prompt.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (files.length === 0) return; // text pastes as text
      e.preventDefault();
      void this.add(files);
    });
    this.render();
  }

  /** Follows the mode and the model: pending images are dropped when images can no longer be sent. */
  set(state: AttachState): void {
    // Unchanged (any settings change calls this): no re-render, which would replace a remove
    // button between the mousedown that blurred a settings field and the click.
    if (JSON.stringify(state) === JSON.stringify(this.state)) return;
    this.state = state;
    if (state.kind !== 'images') this.pending = [];
    this.render();
  }

  /** The pending images' `data:` URLs, handed over for sending; the composer is emptied of them. */
  take(): string[] {
    const urls = this.pending.map((p) => p.url);
    this.pending = [];
    this.render();
    return urls;
  }

  get count(): number {
    return this.pending.length;
  }

  private async add(files: File[]): Promise<void> {
    const state = this.state;
    if (state.kind !== 'images') {
      this.hooks.onError(
        state.kind === 'no-images'
          ? `No image attached: ${state.reason}`
          : 'Images go with chat messages only',
      );
      return;
    }
    for (const file of files) {
      const refusal = imageRefusal(file, state.maxBytes);
      if (refusal) return this.hooks.onError(refusal);
      if (this.hooks.sentImages() + this.pending.length >= MAX_IMAGES)
        return this.hooks.onError(
          `${file.name}: a request takes at most ${MAX_IMAGES} images, this conversation's included`,
        );
      try {
        this.pending.push({ name: file.name, url: await readAsDataUrl(file) });
      } catch (err) {
        return this.hooks.onError(`${file.name}: ${(err as Error).message}`);
      } finally {
        this.render();
      }
    }
  }

  private render(): void {
    const { group, button, input, help, list } = this.el;
    const s = this.state;
    group.hidden = s.kind === 'hidden';
    button.disabled = input.disabled = s.kind !== 'images';
    help.textContent =
      s.kind === 'images'
        ? `PNG, JPEG, WebP or GIF up to ${formatBytes(s.maxBytes)}; drop or paste one too`
        : s.kind === 'no-images'
          ? s.reason
          : '';
    list.hidden = this.pending.length === 0;
    list.replaceChildren(
      ...this.pending.map((p, i) => {
        const li = document.createElement('li');
        const img = document.createElement('img');
        img.src = p.url;
        img.alt = `Image ${i + 1}: ${p.name}`;
        const remove = document.createElement('button');
        remove.type = 'button';
        remove.className = 'ghost small';
        remove.textContent = '×';
        remove.setAttribute('aria-label', `Remove image ${p.name}`);
        remove.addEventListener('click', () => {
          this.pending = this.pending.filter((x) => x !== p);
          this.render();
        });
        li.append(img, remove);
        return li;
      }),
    );
  }
}
