/**
 * The dashboard page: reads this listener's GET /metrics-json (its `prism` object) and
 * GET /v1/status every few seconds and draws the series with uPlot. The same public numbers
 * any monitoring client gets; nothing private.
 */
import 'uplot/dist/uPlot.min.css';
import './dashboard.css';
import uPlot from 'uplot';
import { apiFetch, askApiKey, errorMessage } from './api.js';
import { point, type Point, type PrismMetrics } from './metrics.js';

/** Points kept per chart (10 minutes at the default 2 s refresh). */
const KEEP = 300;
/** Latency quantiles and the prefix-cache hit rate are taken over this window, seconds. */
const WINDOW_S = 30;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

interface ChartSpec {
  id: string;
  series: { label: string; value: (p: Point) => number | null; color: string; dash?: number[] }[];
  min?: number;
  max?: number;
}

const specs: ChartSpec[] = [
  {
    id: 'chart-throughput',
    series: [
      { label: 'output tok/s', value: (p) => p.outputTokensPerS, color: '#5b3fd6' },
      { label: 'prompt tok/s', value: (p) => p.promptTokensPerS, color: '#2a9d8f', dash: [6, 4] },
    ],
  },
  {
    id: 'chart-requests',
    series: [
      { label: 'running', value: (p) => p.running, color: '#2a9d8f' },
      { label: 'waiting', value: (p) => p.waiting, color: '#e76f51' },
    ],
  },
  {
    id: 'chart-ttft',
    series: [
      { label: 'p50', value: (p) => p.ttftP50Ms, color: '#5b3fd6' },
      { label: 'p99', value: (p) => p.ttftP99Ms, color: '#e76f51' },
    ],
  },
  {
    id: 'chart-itl',
    series: [
      { label: 'p50', value: (p) => p.itlP50Ms, color: '#5b3fd6' },
      { label: 'p99', value: (p) => p.itlP99Ms, color: '#e76f51' },
    ],
  },
  {
    id: 'chart-kv',
    series: [
      { label: 'used', value: (p) => p.kvUsed, color: '#e76f51' },
      { label: 'free', value: (p) => p.kvFree, color: '#2a9d8f' },
    ],
  },
  {
    id: 'chart-prefix',
    series: [{ label: 'hit rate %', value: (p) => p.prefixHitPct, color: '#5b3fd6' }],
    min: 0,
    max: 100,
  },
];

const points: Point[] = [];
const reads: PrismMetrics[] = [];
const charts = new Map<string, uPlot>();

function chartWidth(fig: HTMLElement): number {
  return Math.max(240, fig.clientWidth - 16);
}

function makeChart(spec: ChartSpec): uPlot {
  const fig = $<HTMLElement>(spec.id);
  const axisColor = getComputedStyle(document.body).color;
  const axis = {
    stroke: axisColor,
    grid: { stroke: 'rgba(128,128,128,0.2)' },
    ticks: { stroke: 'rgba(128,128,128,0.3)' },
  };
  const opts: uPlot.Options = {
    width: chartWidth(fig),
    height: 170,
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    scales: {
      x: { time: true },
      y:
        spec.min !== undefined
          ? { range: [spec.min, spec.max ?? 100] }
          : { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
    },
    axes: [axis, { ...axis, size: 50 }],
    series: [
      {},
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        dash: s.dash,
        spanGaps: false,
      })),
    ],
  };
  return new uPlot(opts, [[], ...spec.series.map(() => [])], fig);
}

function redraw(): void {
  for (const spec of specs) {
    const chart = charts.get(spec.id);
    if (!chart) continue;
    const data: uPlot.AlignedData = [
      points.map((p) => p.time),
      ...spec.series.map((s) => points.map((p) => s.value(p))),
    ];
    chart.setData(data);
  }
}

const fmt = (n: number): string => n.toLocaleString('en-US');

function showTotals(m: PrismMetrics): void {
  $('model-name').textContent = `${m.model} · up ${Math.round((m.time - m.startedAt) / 60)} min`;
  $('requests-total').textContent = fmt(m.requests.received);
  $('requests-ok').textContent = fmt(m.requests.succeeded);
  $('requests-failed').textContent = fmt(m.requests.failed);
  $('requests-now').textContent = `${m.requests.running} / ${m.requests.waiting}`;
  $('tokens-total').textContent = fmt(m.tokens.generation);
  $('kv-now').textContent = `${fmt(m.kvBlocks.used)} / ${fmt(m.kvBlocks.total)}`;
  $('prefix-total').textContent = m.prefixCache.enabled
    ? m.prefixCache.queriedTokens > 0
      ? `${((100 * m.prefixCache.hitTokens) / m.prefixCache.queriedTokens).toFixed(1)} %`
      : '–'
    : 'off';
  $('preemptions').textContent = fmt(m.requests.preemptions);
  // Speculative decoding: the share of draft tokens accepted, and tokens gained per verify step.
  const sd = m.speculativeDecoding;
  $('spec-accepted').textContent = !sd
    ? 'off'
    : sd.draftTokens > 0
      ? `${((100 * sd.acceptedTokens) / sd.draftTokens).toFixed(1)} % · ${(sd.acceptedTokens / Math.max(1, sd.drafts)).toFixed(2)}/step (${sd.method})`
      : `– (${sd.method})`;
  $('families').replaceChildren(
    ...Object.entries(m.families).map(([family, c]) => {
      const tr = document.createElement('tr');
      for (const [i, text] of [family, fmt(c.requests), fmt(c.errors)].entries()) {
        const cell = document.createElement(i === 0 ? 'th' : 'td');
        if (i === 0) cell.setAttribute('scope', 'row');
        cell.textContent = text;
        tr.append(cell);
      }
      return tr;
    }),
  );
  const adapters = m.models.filter((x) => x.parent !== null && x.parent !== 'null');
  $('models').replaceChildren(
    ...m.models.map((x) => {
      const li = document.createElement('li');
      li.textContent =
        x.parent && x.parent !== 'null' ? `${x.id} — adapter of ${x.parent}` : `${x.id} — base model`;
      return li;
    }),
    ...(adapters.length === 0
      ? [
          Object.assign(document.createElement('li'), {
            className: 'help',
            textContent: 'no adapters loaded',
          }),
        ]
      : []),
  );
}

function showStatus(status: { service?: Record<string, unknown>; resource?: Record<string, unknown> }): void {
  const rows: [string, unknown][] = [
    ['role', status.service?.currentRole],
    ['role status', status.service?.roleStatus],
    ['free slots', status.resource?.availSlotsNum],
    ['free KV blocks', status.resource?.availBlockNum],
    ['total KV blocks', status.resource?.totalNpuBlockNums],
  ];
  $('status').replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v === undefined ? '–' : String(v);
      return [dt, dd];
    }),
  );
}

function showError(message: string | null): void {
  const box = $('error');
  box.hidden = message === null;
  box.textContent = message ?? '';
}

async function getJson<T>(path: string): Promise<T> {
  const res = await apiFetch(path, { headers: { Accept: 'application/json' } });
  if (!res.ok) throw new Error(`${path}: ${await errorMessage(res)}`);
  return (await res.json()) as T;
}

async function refresh(): Promise<void> {
  try {
    const [metrics, status] = await Promise.all([
      getJson<{ prism?: PrismMetrics }>('/metrics-json'),
      getJson<Record<string, never>>('/v1/status'),
    ]);
    if (!metrics.prism) throw new Error('/metrics-json has no `prism` object: is this server Prism?');
    const cur = metrics.prism;
    const prev = reads[reads.length - 1] ?? null;
    const windowStart = reads.find((r) => cur.time - r.time <= WINDOW_S) ?? prev;
    reads.push(cur);
    while (reads.length > 1 && cur.time - reads[0].time > WINDOW_S + 10) reads.shift();
    points.push(point(prev, windowStart, cur));
    if (points.length > KEEP) points.shift();
    showTotals(cur);
    showStatus(status);
    redraw();
    showError(null);
    $('updated').textContent = `updated ${new Date(cur.time * 1000).toLocaleTimeString()}`;
  } catch (err) {
    showError((err as Error).message);
  }
}

let timer: ReturnType<typeof setTimeout> | undefined;
function schedule(): void {
  clearTimeout(timer);
  const every = Number($<HTMLSelectElement>('interval').value);
  if (every > 0) timer = setTimeout(() => void refresh().then(schedule), every);
}

const interval = $<HTMLSelectElement>('interval');
const asked = new URLSearchParams(location.search).get('interval');
if (asked && /^\d+$/.test(asked) && Number(asked) >= 250) {
  const option = document.createElement('option');
  option.value = asked;
  option.textContent = `${Number(asked) / 1000} s`;
  interval.append(option);
  interval.value = asked;
}
interval.addEventListener('change', schedule);
$('api-key').addEventListener('click', () => void askApiKey().then(() => refresh()));
for (const spec of specs) charts.set(spec.id, makeChart(spec));
window.addEventListener('resize', () => {
  for (const spec of specs) charts.get(spec.id)?.setSize({ width: chartWidth($(spec.id)), height: 170 });
});
void refresh().then(schedule);
