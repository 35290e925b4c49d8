// Parses the Prometheus text exposition (what /metrics serves) into samples, for tests that read metrics.

/** One sample of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition (what /metrics serves) into samples; comments are skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[3] ?? '';
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;
    let consumed = 0;
    let label: RegExpExecArray | null;
    while ((label = labelRe.exec(body)) !== null) {
      labels[label[1]!] = label[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed = labelRe.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`unreadable labels in: ${line}`);
    const valueText = match[4]!;
    // prom-client writes NaN as "Nan".
    const value =
      valueText === '+Inf'
        ? Infinity
        : valueText === '-Inf'
          ? -Infinity
          : /^nan$/i.test(valueText)
            ? NaN
            : Number(valueText);
    if (Number.isNaN(value) && !/^nan$/i.test(valueText)) throw new Error(`unreadable value in: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}
