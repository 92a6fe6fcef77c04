/**
 * A stacked bar chart of usage per day (uPlot). Each series is drawn as bars reaching the sum of
 * itself and the series after it, back to front, so the bars stack; the legend shows each series'
 * own value. The chart is a picture for sighted readers: the same numbers are in the table beside
 * it, so the canvas is hidden from assistive technology.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { stacked, type UsageSeries } from './usage-series.js';

/** Colour-blind-safe palette (Okabe & Ito, 2008). */
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

export function UsageChart({
  data,
  format,
  title,
}: {
  data: UsageSeries;
  format: (value: number) => string;
  title: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (element === null || data.days.length === 0) return;
    // No bar (rather than a flat one) on days without usage.
    const sums = stacked(data.series).map((values) => values.map((value) => (value === 0 ? null : value)));
    const xs = data.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const bars = uPlot.paths.bars!({ size: [0.6, 64] });
    const options: uPlot.Options = {
      title,
      width: Math.max(320, element.clientWidth),
      height: 280,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: {
        x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [{}, { values: (_u, ticks) => ticks.map((tick) => format(tick)), size: 80 }],
      series: [
        { label: 'Day', value: (_u, ts) => (ts === null ? '—' : new Date(ts * 1000).toISOString().slice(0, 10)) },
        ...data.series.map((entry, i) => ({
          label: entry.name,
          stroke: COLOURS[i % COLOURS.length],
          fill: COLOURS[i % COLOURS.length],
          paths: bars,
          points: { show: false },
          value: (_u: uPlot, _v: number | null, _si: number, index: number | null) =>
            index === null ? '—' : format(entry.values[index] ?? 0),
        })),
      ],
      cursor: { drag: { x: false, y: false } },
    };
    const plot = new uPlot(options, [xs, ...sums], element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(320, element.clientWidth), height: 280 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [data, format, title]);
  return <div class="chart" ref={box} aria-hidden="true" />;
}
