// @ts-check
// The run dashboard of the shears report and `shears view`: charts of the run's metrics stream
// (`<out>.metrics.jsonl`, rows described in docs/runs.md) drawn with uPlot. Rows are read by kind:
// `shears.metrics.group` rows make the charts over time (the dashboard bins them itself, so every
// chart shares one time axis); window rows draw throughput, cost, the trajectory API's queue and
// the off-policy lag, step rows the reward and pass rate per trainer step; any other kind
// (curriculum, safety, evaluation, ... rows) is an event on the time axis, and rows that carry a
// curriculum level, a replay mark or pass@k values also get their own chart. Clicking a point
// hands its groups to the trajectory view (options.onOpen).
(() => {
  const PALETTE = [
    '#0969da',
    '#cf222e',
    '#1a7f37',
    '#8250df',
    '#bf8700',
    '#1b7c83',
    '#e16f24',
    '#6e7781',
    '#bf3989',
    '#4d2d00',
  ];
  const OUTCOME_COLORS = {
    scored: '#1a7f37',
    model_failure: '#bf8700',
    infra_failure: '#cf222e',
    judge_failure: '#8250df',
    timeout: '#e16f24',
    aborted: '#6e7781',
  };
  const LATENCY_PARTS = ['model', 'tools', 'sandboxAcquire', 'reward', 'judges', 'sandboxRelease'];
  const MAX_BINS = 60;
  const MAX_TASK_SERIES = 8;

  const { el, fmt } = window.shearsDom;
  /** @param {number} seconds */
  function clock(seconds) {
    if (seconds < 120) return `${fmt(seconds, seconds < 10 ? 1 : 0)} s`;
    if (seconds < 7200) return `${fmt(seconds / 60, 1)} min`;
    return `${fmt(seconds / 3600, 1)} h`;
  }
  /**
   * An axis' tick texts, in one form for the whole axis: plain numbers with no more digits than
   * they need, or, when the largest is under 0.01 or over a million, exponent form (a KL axis
   * reads 0, 5.0e-4, 1.0e-3, not 0.000, 0.001).
   * @param {number[]} ticks
   */
  function axisNumbers(ticks) {
    const largest = ticks.reduce((most, tick) => Math.max(most, Math.abs(tick || 0)), 0);
    const exponent = largest > 0 && (largest < 0.01 || largest >= 1e6);
    return ticks.map((tick) => {
      if (tick === null || tick === undefined) return '';
      if (tick === 0) return '0';
      return exponent ? tick.toExponential(1) : String(Number(tick.toPrecision(4)));
    });
  }
  /** @param {any} value */
  function isNumber(value) {
    return typeof value === 'number' && Number.isFinite(value);
  }

  /** @param {any} value */
  function isLevel(value) {
    return isNumber(value) || (typeof value === 'string' && value !== '');
  }
  /**
   * The curriculum level a row carries (a difficulty value: a number or a name). The loop writes
   * it as `loop.curriculumLevel` on group rows and `to` on `curriculum_*` events of
   * `shears.metrics.loop` rows; `curriculumLevel`, `curriculum.level` and `level` on a row whose
   * kind names the curriculum are read too.
   * @param {any} row
   * @returns {number | string | null}
   */
  function levelOf(row) {
    if (row.loop && isLevel(row.loop.curriculumLevel)) return row.loop.curriculumLevel;
    if (String(row.event).indexOf('curriculum') === 0 && isLevel(row.to)) return row.to;
    if (isLevel(row.curriculumLevel)) return row.curriculumLevel;
    if (row.curriculum && isLevel(row.curriculum.level)) return row.curriculum.level;
    if (String(row.kind).indexOf('curriculum') >= 0 && isLevel(row.level)) return row.level;
    return null;
  }
  /**
   * Whether a group row is a replayed group (true), a fresh one (false), or says nothing (null):
   * the loop sets `loop.replayOf` on a replayed group's row.
   * @param {any} row
   */
  function replayedOf(row) {
    if (row.loop && typeof row.loop === 'object') return typeof row.loop.replayOf === 'string';
    if (typeof row.replayed === 'boolean') return row.replayed;
    if (row.replay && typeof row.replay.replayed === 'boolean') return row.replay.replayed;
    return null;
  }
  /**
   * pass@k entries of an evaluation row (`shears.metrics.eval`): `passAtK: { 'pass@1': 0.4 }` with
   * pass@1's interval in `passAt1Interval`, or `{ 'pass@1': { mean, low, high } }`; the mean
   * score with its interval as `mean score`.
   * @param {any} row
   * @returns {Record<string, { mean: number, low: number | null, high: number | null }>}
   */
  function passAtKOf(row) {
    /** @type {Record<string, { mean: number, low: number | null, high: number | null }>} */
    const out = {};
    const source = row.passAtK || row.evaluation?.passAtK;
    if (!source || typeof source !== 'object') return out;
    Object.keys(source).forEach((key) => {
      const value = source[key];
      const interval = key === 'pass@1' && row.passAt1Interval ? row.passAt1Interval : value;
      if (isNumber(value) || (value && isNumber(value.mean)))
        out[key] = {
          mean: isNumber(value) ? value : value.mean,
          low: interval && isNumber(interval.low) ? interval.low : null,
          high: interval && isNumber(interval.high) ? interval.high : null,
        };
    });
    if (row.meanScore && isNumber(row.meanScore.mean))
      out['mean score'] = {
        mean: row.meanScore.mean,
        low: isNumber(row.meanScore.low) ? row.meanScore.low : null,
        high: isNumber(row.meanScore.high) ? row.meanScore.high : null,
      };
    return out;
  }
  /** A one-line description of an event row. @param {any} row */
  function describeEvent(row) {
    const kind = String(row.kind).replace(/^shears\.(metrics|event)\./, '');
    /** @type {string[]} */
    const words = [];
    ['event', 'action', 'reason', 'message'].forEach((key) => {
      if (typeof row[key] === 'string') words.push(row[key]);
    });
    if (isLevel(row.from) && isLevel(row.to)) words.push('level ' + row.from + ' \u2192 ' + row.to);
    else {
      const level = levelOf(row);
      if (level !== null) words.push('level ' + level);
    }
    if (isNumber(row.mean)) words.push('rolling mean ' + fmt(row.mean, 3));
    if (isNumber(row.score))
      words.push(
        'score ' +
          fmt(row.score, 3) +
          (isNumber(row.baseline) ? ' (baseline ' + fmt(row.baseline, 3) : '') +
          (isNumber(row.baseline) && isNumber(row.tolerance) ? ', tolerance ' + fmt(row.tolerance, 2) : '') +
          (isNumber(row.baseline) ? ')' : ''),
      );
    if (row.weights && typeof row.weights === 'object')
      words.push(
        'mix ' +
          Object.keys(row.weights)
            .map((key) => key + ' ' + fmt(row.weights[key], 2))
            .join(', '),
      );
    const pass = passAtKOf(row);
    Object.keys(pass).forEach((key) => {
      words.push(key + ' ' + fmt(pass[key]?.mean, 3));
    });
    if (isNumber(row.step)) words.push('step ' + row.step);
    if (row.complete === false) words.push('INCOMPLETE');
    const label = kind + (typeof row.event === 'string' ? ' ' + row.event : '');
    return { kind: kind, text: words.join(' \u00b7 '), alarm: /safety|regress/.test(label) };
  }

  /**
   * Everything the charts draw, from the rows.
   * @param {any[]} metrics
   */
  function derive(metrics) {
    /** @type {any[]} */
    const groupRows = [];
    /** @type {any[]} */
    const events = [];
    /** @type {Array<[number, number | string]>} */
    const levels = [];
    /** @type {Array<{ at: number, passAtK: Record<string, { mean: number, low: number | null, high: number | null }> }>} */
    const evaluations = [];
    // Window and step rows, each with the groups whose rows were written since the previous one of
    // its kind (the stream writes a window or step row after the groups it covers).
    /** @type {Array<{ row: any, groupIds: string[] }>} */
    const windows = [];
    /** @type {Array<{ row: any, groupIds: string[] }>} */
    const steps = [];
    /** The trainer's own rows (loss, KL, entropy, reward by trainer step). @type {any[]} */
    const trainerRows = [];
    /** @type {string[]} */
    let sinceWindow = [];
    /** @type {string[]} */
    let sinceStep = [];
    metrics.forEach((row) => {
      if (!row || typeof row !== 'object' || !isNumber(row.elapsedSeconds)) return;
      if (row.kind === 'shears.metrics.window') {
        windows.push({ row: row, groupIds: sinceWindow });
        sinceWindow = [];
        return;
      }
      if (row.kind === 'shears.metrics.step') {
        steps.push({ row: row, groupIds: sinceStep });
        sinceStep = [];
        return;
      }
      if (row.kind === 'shears.metrics.trainer') {
        if (isNumber(row.step)) trainerRows.push(row);
        return;
      }
      if (row.kind === 'shears.metrics.group') {
        sinceWindow.push(row.groupId);
        sinceStep.push(row.groupId);
        groupRows.push(row);
        const groupLevel = levelOf(row);
        if (groupLevel !== null) levels.push([row.elapsedSeconds, groupLevel]);
        return;
      }
      const level = levelOf(row);
      if (level !== null) levels.push([row.elapsedSeconds, level]);
      const pass = passAtKOf(row);
      if (Object.keys(pass).length) evaluations.push({ at: row.elapsedSeconds, passAtK: pass });
      events.push({ at: row.elapsedSeconds, row: row, ...describeEvent(row) });
    });
    groupRows.sort((a, b) => a.elapsedSeconds - b.elapsedSeconds);
    levels.sort((a, b) => a[0] - b[0]);
    // Levels named by strings (difficulty names) are charted as their order of first appearance.
    /** @type {string[] | null} */
    const levelNames = levels.some((point) => typeof point[1] === 'string') ? [] : null;
    /** @type {Array<[number, number]>} */
    const levelPoints = levels.map((point) => {
      if (!levelNames) return [point[0], Number(point[1])];
      const name = String(point[1]);
      if (levelNames.indexOf(name) < 0) levelNames.push(name);
      return [point[0], levelNames.indexOf(name)];
    });
    return {
      groupRows: groupRows,
      events: events,
      levels: levelPoints,
      levelNames: levelNames,
      evaluations: evaluations,
      windows: windows.sort((a, b) => a.row.elapsedSeconds - b.row.elapsedSeconds),
      steps: steps.sort((a, b) => a.row.elapsedSeconds - b.row.elapsedSeconds),
      // One point per step: a step the trainer wrote twice (a resumed run) keeps its last row.
      trainer: Array.from(new Map(trainerRows.map((row) => [row.step, row])).values()).sort(
        (a, b) => a.step - b.step,
      ),
      bins: binRows(groupRows),
    };
  }

  /**
   * Group rows into equal time bins, with each bin's aggregates.
   * @param {any[]} rows sorted by elapsedSeconds
   */
  function binRows(rows) {
    if (!rows.length) return [];
    const start = rows[0].elapsedSeconds;
    const end = rows[rows.length - 1].elapsedSeconds;
    // About four groups a bin at least, so a short run's bins are not mostly empty.
    const count = Math.max(1, Math.min(MAX_BINS, Math.ceil(rows.length / 4)));
    const width = (end - start) / count || 1;
    /** @type {any[]} */
    const bins = [];
    for (let index = 0; index < count; index++)
      bins.push({
        from: start + index * width,
        to: start + (index + 1) * width,
        groupIds: [],
        rewardSum: 0,
        rewardCount: 0,
        tasks: {},
        outcomes: {},
        latency: {},
        tools: {},
        disagreementSum: 0,
        panels: 0,
        judgeFailures: 0,
        replayed: 0,
        replayKnown: 0,
      });
    rows.forEach((row) => {
      const bin = bins[Math.min(count - 1, Math.floor((row.elapsedSeconds - start) / width))];
      bin.groupIds.push(row.groupId);
      if (row.reward && isNumber(row.reward.mean)) {
        bin.rewardSum += row.reward.mean * row.reward.count;
        bin.rewardCount += row.reward.count;
      }
      if (isNumber(row.passRate)) {
        const task = bin.tasks[row.taskId] || (bin.tasks[row.taskId] = { passSum: 0, groups: 0 });
        task.passSum += row.passRate;
        task.groups++;
      }
      Object.keys(row.outcomes || {}).forEach((key) => {
        bin.outcomes[key] = (bin.outcomes[key] || 0) + row.outcomes[key];
      });
      LATENCY_PARTS.forEach((part) => {
        if (row.latencyMs && isNumber(row.latencyMs[part]))
          bin.latency[part] = (bin.latency[part] || 0) + row.latencyMs[part];
      });
      Object.keys(row.tools || {}).forEach((name) => {
        const tool = bin.tools[name] || (bin.tools[name] = { calls: 0, errors: 0 });
        tool.calls += row.tools[name].calls || 0;
        tool.errors += row.tools[name].errors || 0;
      });
      const judges = row.judges || {};
      if (isNumber(judges.meanDisagreementStd) && judges.panels > 0) {
        bin.disagreementSum += judges.meanDisagreementStd * judges.panels;
        bin.panels += judges.panels;
      }
      Object.keys(judges.failures || {}).forEach((kind) => {
        bin.judgeFailures += judges.failures[kind];
      });
      const replayed = replayedOf(row);
      if (replayed !== null) {
        bin.replayKnown++;
        if (replayed) bin.replayed++;
      }
    });
    return bins;
  }

  /** @param {any[]} rows */
  function rollingMean(rows) {
    const size = Math.max(5, Math.min(200, Math.round(rows.length / 40)));
    /** @type {Array<number | null>} */
    const out = [];
    let sum = 0;
    let count = 0;
    /** @type {number[]} */
    const window = [];
    rows.forEach((row) => {
      const value = row.reward && isNumber(row.reward.mean) ? row.reward.mean : null;
      window.push(value === null ? Number.NaN : value);
      if (value !== null) {
        sum += value;
        count++;
      }
      if (window.length > size) {
        const gone = /** @type {number} */ (window.shift());
        if (!Number.isNaN(gone)) {
          sum -= gone;
          count--;
        }
      }
      out.push(count ? sum / count : null);
    });
    return { size: size, values: out };
  }

  /**
   * @param {{ container: HTMLElement, metrics: any[], groups: any[], onOpen: (selection: { label: string, groupIds: string[], outcome?: string, task?: string }) => void }} options
   */
  function createDashboard(options) {
    const container = options.container;
    let metrics = options.metrics;
    let groups = options.groups;
    /** @type {any[]} */
    let plots = [];
    let built = false;

    /** @param {number} columns */
    function chartWidth(columns) {
      const width = container.clientWidth - 32;
      return Math.max(280, Math.floor(columns > 1 && width > 1000 ? width / 2 - 30 : width - 24));
    }

    /**
     * One chart: a titled box with a uPlot inside, events drawn as vertical lines.
     * @param {HTMLElement} grid
     * @param {{ id: string, title: string, note?: string, x: number[], xKind?: 'time' | 'step', yLabel?: string, series: Array<{ label: string, values: Array<number | null>, color: string, points?: boolean, width?: number, dash?: number[] }>, yRange?: [number, number], onClick?: (index: number) => void, events: any[], stepped?: boolean, yNames?: string[] | null }} spec
     */
    function chart(grid, spec) {
      const box = el('section', { class: 'chart', 'data-testid': `chart-${spec.id}` }, [
        el('h3', { text: spec.title }),
        spec.note ? el('div', { class: 'muted', text: spec.note }) : null,
      ]);
      grid.appendChild(box);
      const uPlot = window.uPlot;
      const byStep = spec.xKind === 'step';
      const plotOptions = {
        width: chartWidth(2),
        height: 200,
        scales: { x: { time: false }, ...(spec.yRange ? { y: { range: spec.yRange } } : {}) },
        legend: { live: true },
        // No drag-zoom; and uPlot would swallow a click whose mouse moved since the last frame as a drag.
        cursor: { drag: { x: false, y: false, click: () => {} } },
        // Every axis is labelled with what it counts and its unit; a step axis ticks whole steps.
        axes: [
          byStep
            ? {
                label: 'trainer step',
                incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
                values: (/** @type {any} */ _u, /** @type {number[]} */ ticks) =>
                  ticks.map((tick) => (Number.isInteger(tick) ? String(tick) : '')),
              }
            : {
                label: 'time since the run started',
                values: (/** @type {any} */ _u, /** @type {number[]} */ ticks) => ticks.map(clock),
              },
          {
            ...(spec.yLabel ? { label: spec.yLabel } : {}),
            ...(spec.yNames
              ? {
                  values: (/** @type {any} */ _u, /** @type {number[]} */ ticks) =>
                    ticks.map((tick) => (Number.isInteger(tick) ? (spec.yNames?.[tick] ?? '') : '')),
                }
              : {
                  values: (/** @type {any} */ _u, /** @type {number[]} */ ticks) => axisNumbers(ticks),
                }),
            // Wide enough for the longest tick text and, when there is one, the label beside it.
            size: (/** @type {any} */ _u, /** @type {string[] | null} */ texts) =>
              Math.max(40, 16 + 7 * Math.max(0, ...(texts || []).map((text) => String(text).length))),
          },
        ],
        series: [
          {
            label: byStep ? 'step' : 'time',
            value: (/** @type {any} */ _u, /** @type {number} */ value) =>
              value === null ? '\u2013' : byStep ? String(value) : clock(value),
          },
        ].concat(
          spec.series.map((series) => ({
            label: series.label,
            stroke: series.color,
            width: series.points ? 0 : series.width || 1.5,
            ...(series.dash ? { dash: series.dash } : {}),
            ...(spec.stepped ? { paths: /** @type {any} */ (uPlot.paths).stepped({ align: 1 }) } : {}),
            // Bins without groups are gaps the line spans; points mark the bins that have data.
            spanGaps: true,
            points: series.points
              ? { show: true, size: 3, fill: series.color, stroke: series.color }
              : { show: spec.x.length <= 60, size: 4, fill: series.color, stroke: series.color },
            value: (/** @type {any} */ _u, /** @type {number} */ value) => fmt(value, 3),
          })),
        ),
        hooks: {
          draw: [
            (/** @type {any} */ u) => {
              const ctx = u.ctx;
              spec.events.forEach((event) => {
                const x = u.valToPos(event.at, 'x', true);
                if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
                ctx.save();
                ctx.strokeStyle = event.alarm ? '#cf222e' : '#8250df';
                ctx.setLineDash([4, 3]);
                ctx.beginPath();
                ctx.moveTo(x, u.bbox.top);
                ctx.lineTo(x, u.bbox.top + u.bbox.height);
                ctx.stroke();
                ctx.restore();
              });
            },
          ],
        },
      };
      const plot = new uPlot(
        plotOptions,
        /** @type {any} */ ([spec.x, ...spec.series.map((series) => series.values)]),
        box,
      );
      const onClick = spec.onClick;
      if (onClick)
        plot.over.addEventListener('click', (event) => {
          // The data point nearest the click (uPlot's cursor index may lag a synthetic click).
          const rect = plot.over.getBoundingClientRect();
          const index = plot.posToIdx(event.clientX - rect.left);
          if (index !== null && index !== undefined && index >= 0) onClick(index);
        });
      plot.over.style.cursor = onClick ? 'pointer' : 'default';
      plots.push(plot);
      // The drawn chart, for tests that read its axes (labels and tick texts are on the canvas).
      /** @type {any} */ (box).uplot = plot;
      return plot;
    }

    /** @param {any} bin */
    function binLabel(bin) {
      return `${bin.groupIds.length} groups finished at ${clock(bin.from)}\u2013${clock(bin.to)}`;
    }

    function perTaskTable() {
      /** @type {Record<string, { groups: number, rollouts: number, rewardSum: number, counted: number, solved: number }>} */
      const tasks = {};
      groups.forEach((group) => {
        const task =
          tasks[group.taskId] ||
          (tasks[group.taskId] = { groups: 0, rollouts: 0, rewardSum: 0, counted: 0, solved: 0 });
        task.groups++;
        group.rollouts.forEach(
          /** @param {any} rollout */ (rollout) => {
            task.rollouts++;
            if (isNumber(rollout.reward)) {
              task.rewardSum += rollout.reward;
              task.counted++;
              if (rollout.success === true) task.solved++;
            }
          },
        );
      });
      const names = Object.keys(tasks).sort((a, b) => {
        const left = /** @type {any} */ (tasks[a]);
        const right = /** @type {any} */ (tasks[b]);
        return (
          (left.counted ? left.rewardSum / left.counted : 2) -
          (right.counted ? right.rewardSum / right.counted : 2)
        );
      });
      const rows = names.map((name) => {
        const task = /** @type {any} */ (tasks[name]);
        return el(
          'tr',
          {
            'data-testid': 'task-row',
            'data-task': name,
            title: 'show these groups',
            onclick: () => {
              options.onOpen({
                label: `task ${name}`,
                groupIds: groups.filter((group) => group.taskId === name).map((group) => group.groupId),
              });
            },
          },
          [
            el('td', { text: name }),
            el('td', { text: String(task.groups) }),
            el('td', { text: String(task.rollouts) }),
            el('td', { text: fmt(task.counted ? task.rewardSum / task.counted : null) }),
            el('td', { text: task.counted ? `${fmt((100 * task.solved) / task.counted, 0)} %` : '\u2013' }),
          ],
        );
      });
      return el('section', { class: 'chart wide', 'data-testid': 'per-task' }, [
        el('h3', {
          text: `Per task (${names.length} tasks, lowest mean reward first; click a row for its groups)`,
        }),
        el('div', { class: 'table-scroll' }, [
          el('table', { class: 'tasks' }, [
            el('thead', {}, [
              el(
                'tr',
                {},
                ['task', 'groups', 'rollouts', 'mean reward', 'solved'].map((head) =>
                  el('th', { text: head }),
                ),
              ),
            ]),
            el('tbody', {}, rows),
          ]),
        ]),
      ]);
    }

    /** @param {any[]} events */
    function eventList(events) {
      if (!events.length) return null;
      return el('section', { class: 'chart wide', 'data-testid': 'events' }, [
        el('h3', { text: `Events (${events.length}; dashed lines on the charts)` }),
        el(
          'ul',
          { class: 'events' },
          events
            .slice(-200)
            .map((event) =>
              el('li', { 'data-testid': 'event', class: event.alarm ? 'safety' : '' }, [
                el('b', { text: `${clock(event.at)} ${event.kind}: ` }),
                event.text,
              ]),
            ),
        ),
      ]);
    }

    /**
     * Charts of the window rows (throughput, cost, queue and lag) and the step rows (per trainer
     * step); a click on a point opens the groups that row covers.
     * @param {HTMLElement} grid @param {any} data @param {any[]} events
     */
    function windowCharts(grid, data, events) {
      /** @type {Array<{ row: any, groupIds: string[] }>} */
      const windows = data.windows;
      /** @type {Array<{ row: any, groupIds: string[] }>} */
      const steps = data.steps;
      /** @param {Array<{ row: any, groupIds: string[] }>} entries @param {(entry: { row: any, groupIds: string[] }) => string} label */
      const opener = (entries, label) => (/** @type {number} */ index) => {
        const entry = entries[index];
        if (entry) options.onOpen({ label: label(entry), groupIds: entry.groupIds.slice() });
      };
      /** @param {{ row: any, groupIds: string[] }} entry */
      const windowLabel = (entry) =>
        `${entry.groupIds.length} groups of the window ending at ${clock(entry.row.elapsedSeconds)}`;
      if (windows.length) {
        const x = windows.map((entry) => entry.row.elapsedSeconds);
        /** @param {(row: any) => any} pick */
        const values = (pick) =>
          windows.map((entry) => {
            const value = pick(entry.row);
            return isNumber(value) ? value : null;
          });
        const tokensPerSecond = values((row) => row.tokens?.completionPerSecond);
        chart(grid, {
          id: 'throughput',
          title: 'Throughput (per window)',
          note: `${windows.length} windows; completion tokens/s and groups finished per minute`,
          x: x,
          series: [
            { label: 'completion tokens/s', values: tokensPerSecond, color: '#0969da', width: 2 },
            {
              label: 'groups/min',
              values: values((row) => (isNumber(row.groupsPerSecond) ? row.groupsPerSecond * 60 : null)),
              color: '#1a7f37',
            },
          ],
          events: events,
          onClick: opener(windows, windowLabel),
        });
        let total = 0;
        const cumulative = windows.map((entry) => {
          if (isNumber(entry.row.tokens?.costUsd)) total += entry.row.tokens.costUsd;
          return total;
        });
        chart(grid, {
          id: 'cost',
          title: 'Cost (USD)',
          note: `total ${fmt(total, 4)} USD as the server reported it (0 when it reports no cost)`,
          x: x,
          series: [
            { label: 'cumulative', values: cumulative, color: '#8250df', width: 2 },
            {
              label: 'per window',
              values: values((row) => row.tokens?.costUsd),
              color: '#bf8700',
              points: true,
            },
          ],
          events: events,
          onClick: opener(windows, windowLabel),
        });
        const withTrainer = windows.some((entry) => entry.row.trainer);
        chart(grid, {
          id: 'trainer-api',
          title: 'Trajectory API: queue depth and off-policy lag',
          note: withTrainer
            ? 'groups queued for the trainer, and the largest lag (trainer steps taken while a group ran) per window'
            : 'no trajectory API in this run (serve and train report it)',
          x: x,
          series: [
            {
              label: 'queue (groups)',
              values: values((row) => row.trainer?.queueSize),
              color: '#cf222e',
              width: 2,
            },
            { label: 'max lag (steps)', values: values((row) => row.trainer?.maxLagSteps), color: '#e16f24' },
          ],
          events: events,
          onClick: opener(windows, windowLabel),
        });
      }
      if (steps.length)
        chart(grid, {
          id: 'steps',
          title: 'Per trainer step: reward and pass rate',
          note: `${steps.length} trainer steps (now ${steps[steps.length - 1]?.row.step}); each point: the groups finished since the previous step`,
          x: steps.map((entry) => entry.row.elapsedSeconds),
          series: [
            {
              label: 'reward mean',
              values: steps.map((entry) => (isNumber(entry.row.reward?.mean) ? entry.row.reward.mean : null)),
              color: '#0969da',
              width: 2,
            },
            {
              label: 'pass rate',
              values: steps.map((entry) => (isNumber(entry.row.passRate) ? entry.row.passRate : null)),
              color: '#1a7f37',
            },
          ],
          events: events,
          onClick: opener(
            steps,
            (entry) => `${entry.groupIds.length} groups of trainer step ${entry.row.step}`,
          ),
        });
    }

    /**
     * The trainer's own rows (`shears train` with the reference trainer): loss, KL, entropy and
     * the batch's mean reward, each against the trainer step, one chart each (their scales differ
     * by orders of magnitude).
     * @param {HTMLElement} grid @param {any[]} rows sorted by step
     */
    function trainerCharts(grid, rows) {
      if (!rows.length) return;
      const x = rows.map((row) => row.step);
      const skipped = rows.filter((row) => row.skipped).length;
      const note = `${rows.length} trainer steps (last: ${x[x.length - 1]})${skipped ? `; ${skipped} skipped (no signal: all advantages zero)` : ''}`;
      // A skipped step took no optimiser step: its loss, KL and entropy are gaps, not zeros.
      /** @param {string} key */
      const values = (key) =>
        rows.map((row) => (isNumber(row[key]) && !(row.skipped && key !== 'rewardMean') ? row[key] : null));
      const charts = [
        {
          id: 'trainer-loss',
          title: 'Training loss per trainer step',
          yLabel: 'loss (per token)',
          label: 'loss',
          key: 'loss',
          color: '#cf222e',
        },
        {
          id: 'trainer-kl',
          title: 'KL to the reference policy per trainer step',
          yLabel: 'KL (nats per token)',
          label: 'KL',
          key: 'kl',
          color: '#8250df',
        },
        {
          id: 'trainer-entropy',
          title: 'Policy entropy per trainer step',
          yLabel: 'entropy (nats per token)',
          label: 'entropy',
          key: 'entropy',
          color: '#bf8700',
        },
        {
          id: 'trainer-reward',
          title: 'Mean reward of the batch per trainer step',
          yLabel: 'mean reward (score)',
          label: 'reward mean',
          key: 'rewardMean',
          color: '#0969da',
        },
      ];
      charts.forEach((entry) => {
        chart(grid, {
          id: entry.id,
          title: entry.title,
          note: note,
          x: x,
          xKind: 'step',
          yLabel: entry.yLabel,
          series: [{ label: entry.label, values: values(entry.key), color: entry.color, width: 2 }],
          events: [],
        });
      });
    }

    function build() {
      plots.forEach((plot) => {
        plot.destroy();
      });
      plots = [];
      container.textContent = '';
      const data = derive(metrics);
      const grid = el('div', { class: 'charts' });
      if (!data.groupRows.length) {
        container.appendChild(
          el('div', {
            class: 'no-metrics',
            'data-testid': 'no-metrics',
            text: 'No metrics stream for this run: charts over time need <out>.metrics.jsonl next to the output (run.metrics: true, the default). The per-task table below is computed from the groups.',
          }),
        );
        container.appendChild(grid);
        grid.appendChild(perTaskTable());
        return;
      }
      const rows = data.groupRows;
      const bins = data.bins;
      const binX = bins.map((bin) => (bin.from + bin.to) / 2);
      const events = data.events;
      /** @param {number} index */
      const openBin = (index) => {
        const bin = bins[index];
        if (bin) options.onOpen({ label: binLabel(bin), groupIds: bin.groupIds.slice() });
      };
      container.appendChild(
        el('div', { class: 'muted dash-note', 'data-testid': 'dashboard-summary' }, [
          rows.length +
            ' groups over ' +
            clock(rows[rows.length - 1].elapsedSeconds) +
            ' (' +
            bins.length +
            ' time bins) \u00b7 click a point to open its trajectories',
        ]),
      );
      container.appendChild(grid);

      const rolling = rollingMean(rows);
      chart(grid, {
        id: 'reward',
        title: 'Reward over time',
        note: `each point: one group\u2019s mean reward; line: rolling mean of the last ${rolling.size} groups`,
        x: rows.map((row) => row.elapsedSeconds),
        series: [
          {
            label: 'group mean',
            values: rows.map((row) => (row.reward && isNumber(row.reward.mean) ? row.reward.mean : null)),
            color: '#8c959f',
            points: true,
          },
          { label: 'rolling mean', values: rolling.values, color: '#0969da', width: 2 },
        ],
        events: events,
        onClick: (index) => {
          const row = rows[index];
          if (row) options.onOpen({ label: `group ${row.groupId}`, groupIds: [row.groupId] });
        },
      });

      const taskCounts = /** @type {Record<string, number>} */ ({});
      rows.forEach((row) => {
        if (isNumber(row.passRate)) taskCounts[row.taskId] = (taskCounts[row.taskId] || 0) + 1;
      });
      const taskNames = Object.keys(taskCounts)
        .sort((a, b) => (taskCounts[b] || 0) - (taskCounts[a] || 0))
        .slice(0, MAX_TASK_SERIES);
      chart(grid, {
        id: 'pass-rate',
        title: 'Pass rate per task over time',
        note:
          taskNames.length < Object.keys(taskCounts).length
            ? `the ${taskNames.length} tasks with most groups of ${Object.keys(taskCounts).length} (all in the table below)`
            : 'share of counted rollouts that solved the task, per time bin',
        x: binX,
        yRange: [0, 1],
        series: taskNames.map((name, index) => ({
          label: name,
          values: bins.map((bin) =>
            bin.tasks[name] ? bin.tasks[name].passSum / bin.tasks[name].groups : null,
          ),
          color: PALETTE[index % PALETTE.length] || '#000',
          points: true,
          width: 1,
        })),
        events: events,
        onClick: openBin,
      });

      const outcomeKeys = Object.keys(
        bins.reduce(
          (all, bin) => {
            Object.keys(bin.outcomes).forEach((key) => {
              all[key] = true;
            });
            return all;
          },
          /** @type {Record<string, boolean>} */ ({}),
        ),
      ).sort();
      chart(grid, {
        id: 'outcomes',
        title: 'Outcomes and failures (rollouts per time bin)',
        note: outcomeKeys
          .map((key) => `${key} ${bins.reduce((sum, bin) => sum + (bin.outcomes[key] || 0), 0)}`)
          .join(' \u00b7 '),
        x: binX,
        series: outcomeKeys.map((key, index) => ({
          label: key,
          values: bins.map((bin) => (bin.groupIds.length ? bin.outcomes[key] || 0 : null)),
          color: /** @type {any} */ (OUTCOME_COLORS)[key] || PALETTE[index % PALETTE.length],
        })),
        events: events,
        onClick: openBin,
      });

      const latencyTotals = LATENCY_PARTS.map((part) =>
        bins.reduce((sum, bin) => sum + (bin.latency[part] || 0), 0),
      );
      const latencyAll = latencyTotals.reduce((sum, value) => sum + value, 0) || 1;
      chart(grid, {
        id: 'latency',
        title: 'Where the time goes (mean ms per group)',
        note: LATENCY_PARTS.map(
          (part, index) => `${part} ${fmt((100 * (latencyTotals[index] || 0)) / latencyAll, 0)} %`,
        ).join(' \u00b7 '),
        x: binX,
        series: LATENCY_PARTS.map((part, index) => ({
          label: part,
          values: bins.map((bin) =>
            bin.groupIds.length ? (bin.latency[part] || 0) / bin.groupIds.length : null,
          ),
          color: PALETTE[index % PALETTE.length] || '#000',
        })),
        events: events,
        onClick: openBin,
      });

      const toolNames = Object.keys(
        bins.reduce(
          (all, bin) => {
            Object.keys(bin.tools).forEach((name) => {
              all[name] = true;
            });
            return all;
          },
          /** @type {Record<string, boolean>} */ ({}),
        ),
      ).sort();
      chart(grid, {
        id: 'tool-errors',
        title: 'Tool error rate per tool',
        note: toolNames.length ? 'errors / calls per time bin' : 'no tool calls in this run',
        x: binX,
        yRange: [0, 1],
        series: toolNames.map((name, index) => ({
          label: name,
          values: bins.map((bin) =>
            bin.tools[name]?.calls ? bin.tools[name].errors / bin.tools[name].calls : null,
          ),
          color: PALETTE[index % PALETTE.length] || '#000',
          points: true,
          width: 1,
        })),
        events: events,
        onClick: openBin,
      });

      const judged = bins.some((bin) => bin.panels > 0 || bin.judgeFailures > 0);
      chart(grid, {
        id: 'judges',
        title: 'Judges: panel disagreement and failures',
        note: judged
          ? 'mean std between a panel\u2019s judges; failed verdicts per bin'
          : 'no judge panels or judge failures in this run',
        x: binX,
        series: [
          {
            label: 'disagreement (std)',
            values: bins.map((bin) => (bin.panels ? bin.disagreementSum / bin.panels : null)),
            color: '#8250df',
            points: true,
          },
          {
            label: 'failed verdicts',
            values: bins.map((bin) => (bin.groupIds.length ? bin.judgeFailures : null)),
            color: '#cf222e',
          },
        ],
        events: events,
        onClick: openBin,
      });

      const replayKnown = bins.some((bin) => bin.replayKnown > 0);
      if (data.levels.length || replayKnown)
        chart(grid, {
          id: 'curriculum',
          title: data.levels.length ? 'Curriculum level' : 'Replayed share of groups',
          note: data.levels.length
            ? (data.levelNames
                ? 'levels in the order reached: ' + data.levelNames.join(' \u2192 ') + '; '
                : '') +
              'now ' +
              (data.levelNames
                ? data.levelNames[data.levels[data.levels.length - 1]?.[1] ?? 0]
                : data.levels[data.levels.length - 1]?.[1])
            : 'share of groups that were replayed, per time bin (no curriculum level recorded)',
          x: data.levels.length ? data.levels.map((point) => point[0]) : binX,
          stepped: data.levels.length > 0,
          yNames: data.levelNames,
          series: data.levels.length
            ? [{ label: 'level', values: data.levels.map((point) => point[1]), color: '#1a7f37', width: 2 }]
            : [
                {
                  label: 'replay share',
                  values: bins.map((bin) => (bin.replayKnown ? bin.replayed / bin.replayKnown : null)),
                  color: '#bf8700',
                },
              ],
          events: events,
        });
      if (data.levels.length && replayKnown)
        chart(grid, {
          id: 'replay',
          title: 'Replayed share of groups',
          x: binX,
          yRange: [0, 1],
          series: [
            {
              label: 'replay share',
              values: bins.map((bin) => (bin.replayKnown ? bin.replayed / bin.replayKnown : null)),
              color: '#bf8700',
            },
          ],
          events: events,
          onClick: openBin,
        });

      if (data.evaluations.length) {
        const keys = Object.keys(data.evaluations[data.evaluations.length - 1]?.passAtK || {});
        /** @type {Array<{ label: string, values: Array<number | null>, color: string, points?: boolean, width?: number, dash?: number[] }>} */
        const series = [];
        keys.forEach((key, index) => {
          const color = PALETTE[index % PALETTE.length] || '#000';
          series.push({
            label: key,
            values: data.evaluations.map((entry) => (entry.passAtK[key] ? entry.passAtK[key].mean : null)),
            color: color,
            points: true,
            width: 2,
          });
          series.push({
            label: `${key} low`,
            values: data.evaluations.map((entry) => (entry.passAtK[key] ? entry.passAtK[key].low : null)),
            color: color,
            width: 1,
            dash: [3, 3],
          });
          series.push({
            label: `${key} high`,
            values: data.evaluations.map((entry) => (entry.passAtK[key] ? entry.passAtK[key].high : null)),
            color: color,
            width: 1,
            dash: [3, 3],
          });
        });
        chart(grid, {
          id: 'evaluation',
          title: 'Evaluation during training: pass@k with intervals',
          x: data.evaluations.map((entry) => entry.at),
          yRange: [0, 1],
          series: series,
          events: events,
        });
      }
      windowCharts(grid, data, events);
      trainerCharts(grid, data.trainer);
      const list = eventList(events);
      if (list) grid.appendChild(list);
      grid.appendChild(perTaskTable());
    }

    return {
      /** Builds the charts on first show (a hidden container has no width), else fits them to it. */
      resize: () => {
        if (!built) {
          built = true;
          build();
          container.setAttribute('data-dashboard-ready', 'true');
          return;
        }
        plots.forEach((plot) => {
          plot.setSize({ width: chartWidth(2), height: 200 });
        });
      },
      /** @param {any[]} nextMetrics @param {any[]} nextGroups */
      update: (nextMetrics, nextGroups) => {
        metrics = nextMetrics;
        groups = nextGroups;
        if (built && container.offsetParent !== null) build();
        else built = false;
      },
    };
  }

  window.shearsDashboard = createDashboard;
})();
