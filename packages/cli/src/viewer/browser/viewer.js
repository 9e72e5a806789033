// @ts-check
// The trajectory view of the shears report and `shears view`: a virtualised list of groups (only
// visible rows exist in the DOM, so 100,000 groups stay responsive), a detail pane that compares
// a group's rollouts turn by turn (aligned mode) above one card per rollout, and the tab that
// shows the run dashboard (dashboard.js). Plain ES2020 run as a classic script; the page embeds
// its data gzip-compressed in #shears-data. Type-checked by tsconfig.browser.json.
(() => {
  let TOKENS_SHOWN = 3000;
  const ROW_HEIGHT = 44;
  const OVERSCAN = 8;
  /** @type {{ data: any, groups: any[], hay: string[], visible: number[], selected: number, dashboard: any, filters: { min: number | null, max: number | null, outcome: string, search: string, dropped: boolean, sort: string, selection: { label: string, groupIds: Set<string>, outcome?: string } | null } }} */
  const state = {
    data: null,
    groups: [],
    hay: [],
    visible: [],
    selected: -1,
    dashboard: null,
    filters: {
      min: null,
      max: null,
      outcome: 'all',
      search: '',
      dropped: true,
      sort: 'file',
      selection: null,
    },
  };

  /** @param {string} id @returns {HTMLElement} */
  function byId(id) {
    const node = document.getElementById(id);
    if (!node) throw new Error(`viewer page without #${id}`);
    return node;
  }
  /** @param {string} id @returns {HTMLInputElement} */
  function inputById(id) {
    return /** @type {HTMLInputElement} */ (byId(id));
  }

  const { el, fmt } = window.shearsDom;
  /** An advantage with its sign: +0.87, -1.20, 0.00. @param {any} value */
  function signed(value) {
    if (value === null || value === undefined || Number.isNaN(value)) return '\u2013';
    const text = Math.abs(value).toFixed(2);
    if (text === '0.00') return '0.00';
    return (value > 0 ? '+' : '-') + text;
  }
  /** @param {any} content */
  function textOf(content) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    if (Array.isArray(content))
      return content.map((part) => (part && typeof part.text === 'string' ? part.text : '')).join('');
    return JSON.stringify(content);
  }
  /** @param {number | null | undefined} score */
  function scoreColor(score) {
    if (score === null || score === undefined) return '#9aa0a6';
    const s = Math.max(0, Math.min(1, score));
    return `hsl(${Math.round(s * 120)}, 60%, 42%)`;
  }
  /** @param {string} text */
  function prettyJson(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (_error) {
      return text;
    }
  }

  /**
   * The text of one embedded block (gzip + base64 in a <script type="application/octet-stream">).
   * Decompression runs off the main thread (DecompressionStream); only the block asked for is read.
   * @param {string} id
   */
  async function blockText(id) {
    const node = document.getElementById(id);
    if (!node) throw new Error(`the page has no #${id} block`);
    const binary = atob((node.textContent || '').trim());
    const bytes = new Uint8Array(binary.length);
    for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
    if (node.getAttribute('data-encoding') !== 'gzip') return new TextDecoder().decode(bytes);
    if (typeof DecompressionStream === 'undefined')
      throw new Error('this browser lacks DecompressionStream (Chrome 80+, Firefox 113+, Safari 16.4+)');
    // Decoded chunk by chunk (a task each): one UTF-8 decode of a 30 MB index would block for ~0.5 s.
    const reader = new Blob([bytes])
      .stream()
      .pipeThrough(new DecompressionStream('gzip'))
      .pipeThrough(new TextDecoderStream())
      .getReader();
    /** @type {string[]} */
    const parts = [];
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      parts.push(chunk.value);
    }
    return parts.join('');
  }
  const INDEX_BATCH = 4000;
  /** Lets the page draw and answer input between the steps of loading. */
  function yieldToPage() {
    return new Promise((resolve) => setTimeout(resolve, 0));
  }

  async function decode() {
    const data = JSON.parse(await blockText('shears-data'));
    await yieldToPage();
    // One summary a line, parsed in batches with a pause between them: at 100,000 groups one
    // JSON.parse of the whole index would hold the main thread for about a second.
    const lines = (await blockText('shears-index')).split('\n');
    /** @type {any[]} */
    const index = [];
    for (let at = 0; at < lines.length; at += INDEX_BATCH) {
      const batch = lines.slice(at, at + INDEX_BATCH).filter((line) => line !== '');
      if (batch.length) for (const summary of JSON.parse(`[${batch.join(',')}]`)) index.push(summary);
      await yieldToPage();
    }
    data.index = index;
    // Rows appended live before the embedded rows are read; the dashboard reads them (loadMetrics).
    data.metrics = [];
    return data;
  }

  /** @type {Promise<void> | null} */
  let metricsLoad = null;
  // The metrics rows (one per group: tens of MB at 100,000 groups) are parsed when the dashboard is
  // first shown, not at load: the trajectory view does not need them.
  function loadMetrics() {
    if (!metricsLoad)
      metricsLoad = (
        document.getElementById('shears-metrics')
          ? blockText('shears-metrics').then((text) => JSON.parse(text))
          : Promise.resolve([])
      ).then((rows) => {
        state.data.metrics = rows.concat(state.data.metrics || []);
      });
    return metricsLoad;
  }

  // Whole records: decoded block by block when a group is opened (a few blocks are kept), or kept
  // as they arrived (`--watch`). The index's summary of a group is never shown as its record.
  /** @type {Map<number, any>} */
  const records = new Map();
  /** @type {Map<number, Promise<string[]>>} */
  const blockLines = new Map();
  const BLOCKS_KEPT = 4;
  let blocksRead = 0;
  /** Records opened lately, parsed (re-rendering a group after a filter change needs no decode). @type {Map<number, any>} */
  const recent = new Map();
  const RECENT_KEPT = 16;
  /** @param {number} index @returns {any} */
  function recordIfLoaded(index) {
    return records.get(index) || recent.get(index);
  }
  /** @param {number} index @returns {Promise<any>} */
  async function loadRecord(index) {
    const kept = records.get(index);
    if (kept) return kept;
    const starts = /** @type {number[]} */ (state.data.groupBlocks || []);
    let block = -1;
    for (let low = 0, high = starts.length - 1; low <= high; ) {
      const middle = (low + high) >> 1;
      if (/** @type {number} */ (starts[middle]) <= index) {
        block = middle;
        low = middle + 1;
      } else high = middle - 1;
    }
    if (block < 0) throw new Error(`no records block holds group ${index}`);
    let lines = blockLines.get(block);
    if (!lines) {
      // How many records blocks were decoded so far: none until a group is opened.
      blocksRead++;
      document.body.setAttribute('data-record-blocks-read', String(blocksRead));
      lines = blockText(`shears-groups-${block}`).then((text) => text.split('\n'));
      blockLines.set(block, lines);
      if (blockLines.size > BLOCKS_KEPT) {
        const oldest = blockLines.keys().next().value;
        if (oldest !== undefined && oldest !== block) blockLines.delete(oldest);
      }
    }
    const line = (await lines)[index - /** @type {number} */ (starts[block])];
    if (!line) throw new Error(`records block ${block} lacks group ${index}`);
    const record = JSON.parse(line);
    if (record.groupId !== state.groups[index].groupId)
      throw new Error(
        `records block ${block} holds ${record.groupId} where group ${state.groups[index].groupId} was expected`,
      );
    recent.set(index, record);
    if (recent.size > RECENT_KEPT) {
      const oldest = recent.keys().next().value;
      if (oldest !== undefined) recent.delete(oldest);
    }
    return record;
  }

  /** @param {any} group */
  function hayOf(group) {
    return `${group.taskId} ${group.item?.prompt || ''} ${group.groupId}`.toLowerCase();
  }

  /** @param {number} index */
  function groupMatches(index) {
    const group = state.groups[index];
    const f = state.filters;
    if (!f.dropped && group.dropped) return false;
    if (f.selection && !f.selection.groupIds.has(group.groupId)) return false;
    if (f.search && (state.hay[index] || '').indexOf(f.search.toLowerCase()) < 0) return false;
    return group.rollouts.some(rolloutMatches);
  }
  /** @param {any} rollout */
  function rolloutMatches(rollout) {
    const f = state.filters;
    const outcome = f.outcome !== 'all' ? f.outcome : f.selection?.outcome;
    if (outcome && rollout.outcome !== outcome) return false;
    if (f.min !== null || f.max !== null) {
      if (rollout.reward === null || rollout.reward === undefined) return false;
      if (f.min !== null && rollout.reward < f.min) return false;
      if (f.max !== null && rollout.reward > f.max) return false;
    }
    return true;
  }

  /** @param {any} group */
  function meanOf(group) {
    return group.stats && typeof group.stats.mean === 'number' ? group.stats.mean : null;
  }
  /** @param {number[]} indexes */
  function sortVisible(indexes) {
    const sort = state.filters.sort;
    if (sort === 'file') return indexes;
    /** @param {number | null} value @param {number} direction */
    const key = (value, direction) => (value === null ? Number.POSITIVE_INFINITY : direction * value);
    /** @type {(index: number) => any} */
    const pick =
      sort === 'mean-desc'
        ? (index) => key(meanOf(state.groups[index]), -1)
        : sort === 'mean-asc'
          ? (index) => key(meanOf(state.groups[index]), 1)
          : sort === 'std-desc'
            ? (index) => key(state.groups[index].stats ? state.groups[index].stats.std : null, -1)
            : (index) => String(state.groups[index].taskId);
    const keys = new Map();
    indexes.forEach((index) => {
      keys.set(index, pick(index));
    });
    return indexes.sort((a, b) => {
      const left = keys.get(a);
      const right = keys.get(b);
      return left < right ? -1 : left > right ? 1 : a - b;
    });
  }

  function applyFilters() {
    const visible = [];
    for (let index = 0; index < state.groups.length; index++) if (groupMatches(index)) visible.push(index);
    state.visible = sortVisible(visible);
    let rollouts = 0;
    state.visible.forEach((index) => {
      rollouts += state.groups[index].rollouts.filter(rolloutMatches).length;
    });
    byId('count').textContent =
      state.visible.length +
      ' of ' +
      state.groups.length +
      ' groups \u00b7 ' +
      rollouts +
      ' matching rollouts';
    byId('spacer').style.height = `${state.visible.length * ROW_HEIGHT}px`;
    const selection = byId('selection');
    selection.classList.toggle('hidden', !state.filters.selection);
    selection.textContent = '';
    if (state.filters.selection)
      selection.append(
        el('span', { text: `from the dashboard: ${state.filters.selection.label} ` }),
        el('button', {
          class: 'link',
          'data-testid': 'clear-selection',
          text: '\u2715 clear',
          onclick: clearSelection,
        }),
      );
    renderRows(true);
    // The detail pane shows a group that matches the filters, or says that none does.
    if (state.visible.indexOf(state.selected) < 0) {
      if (state.visible.length) select(/** @type {number} */ (state.visible[0]));
      else {
        state.selected = -1;
        renderDetail();
      }
    } else renderDetail();
  }

  function clearSelection() {
    state.filters.selection = null;
    applyFilters();
  }

  let lastRange = '';
  /** @param {boolean} force */
  function renderRows(force) {
    const list = byId('list');
    const rows = byId('rows');
    const first = Math.max(0, Math.floor(list.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(
      state.visible.length,
      Math.ceil((list.scrollTop + list.clientHeight) / ROW_HEIGHT) + OVERSCAN,
    );
    const range = `${first}:${last}`;
    if (!force && range === lastRange) return;
    lastRange = range;
    rows.textContent = '';
    for (let position = first; position < last; position++)
      rows.appendChild(renderRow(/** @type {number} */ (state.visible[position]), position));
  }

  /** @param {any} group @param {any} rollout @param {number} rolloutIndex @param {string} testid */
  function chip(group, rollout, rolloutIndex, testid) {
    return el('button', {
      class: `chip${rolloutMatches(rollout) ? '' : ' dim'}`,
      style: `background:${scoreColor(rollout.reward)}`,
      'data-testid': testid,
      'data-rollout': String(rolloutIndex),
      title:
        'rollout ' +
        rolloutIndex +
        ': ' +
        rollout.outcome +
        ', reward ' +
        fmt(rollout.reward) +
        ', advantage ' +
        signed(group.advantages[rolloutIndex]) +
        ' (click: show it)',
      text: rollout.reward === null || rollout.reward === undefined ? '\u00d7' : fmt(rollout.reward, 1),
    });
  }

  /** @param {number} index @param {number} position */
  function renderRow(index, position) {
    const group = state.groups[index];
    const chips = group.rollouts.map(
      /** @param {any} rollout @param {number} rolloutIndex */ (rollout, rolloutIndex) => {
        const node = chip(group, rollout, rolloutIndex, 'row-chip');
        node.addEventListener('click', (event) => {
          event.stopPropagation();
          // Shown once the group's record is open (at once when it already is).
          focusRollout = rolloutIndex;
          select(index);
        });
        return node;
      },
    );
    return el(
      'div',
      {
        class: `row${index === state.selected ? ' selected' : ''}`,
        style: `top:${position * ROW_HEIGHT}px`,
        'data-testid': 'group-row',
        'data-group': group.groupId,
        onclick: () => {
          select(index);
        },
      },
      [
        el('div', { class: 'row-head' }, [
          el('span', { class: 'task', title: `${group.taskId} \u00b7 ${group.groupId}`, text: group.taskId }),
          group.dropped ? el('span', { class: 'badge dropped', text: 'dropped' }) : null,
          el('span', { class: 'mean', 'data-testid': 'row-mean', text: `mean ${fmt(meanOf(group))}` }),
        ]),
        // Past 10 rollouts the chips are colour only (the value is in the tooltip): digits would not fit.
        el('div', { class: group.rollouts.length > 10 ? 'chips many' : 'chips' }, chips),
      ],
    );
  }

  /** @param {number} index */
  function select(index) {
    state.selected = index;
    renderRows(true);
    renderDetail();
  }

  /** Scrolls the rollout's card into view and marks it. @param {number} rolloutIndex */
  function showRollout(rolloutIndex) {
    const card = document.querySelector(`[data-testid=rollout][data-rollout="${rolloutIndex}"]`);
    if (!card) return;
    document.querySelectorAll('.rollout.focused').forEach((node) => {
      node.classList.remove('focused');
    });
    card.classList.add('focused');
    card.scrollIntoView({ block: 'start', inline: 'nearest' });
  }

  /** @param {string} text */
  function renderDiff(text) {
    const pre = el('pre', { class: 'diff' });
    text.split('\n').forEach((line) => {
      const cls =
        line.indexOf('+++') === 0 || line.indexOf('---') === 0
          ? 'meta'
          : line[0] === '+'
            ? 'add'
            : line[0] === '-'
              ? 'del'
              : line.indexOf('@@') === 0
                ? 'hunk'
                : '';
      pre.appendChild(el('span', { class: cls, text: `${line}\n` }));
    });
    return pre;
  }

  // rewardDetails.verdicts: VerdictRecords (@shears/core verdictRecordSchema), the one shape the
  // group runner and judgeReward write.
  /** @param {any} details */
  function renderVerdicts(details) {
    const list = details.verdicts;
    if (!Array.isArray(list) || list.length === 0) return null;
    return el(
      'div',
      { class: 'verdicts', 'data-testid': 'verdicts' },
      list.map((verdict) =>
        el('div', { class: 'verdict' }, [
          el('b', { text: `${verdict.judge}: ` }),
          verdict.status === 'failed'
            ? el('span', { class: 'badge failed', text: `failed: ${verdict.reason || ''}` })
            : el('span', { text: `score ${fmt(verdict.score)}` }),
          renderInjectionFlag(verdict),
          verdict.rationale ? el('div', { class: 'rationale', text: verdict.rationale }) : null,
        ]),
      ),
    );
  }

  // A verdict the judges' screen flagged (details.injection from @shears/judges): the flag beside
  // the score, what followed, and the suspicious spans.
  /** @param {any} verdict */
  function renderInjectionFlag(verdict) {
    const injection = verdict.details?.injection;
    if (!injection?.suspected) return null;
    const spans = Array.isArray(injection.spans) ? injection.spans : [];
    // What the judge said, when it was asked and answered (a penalised rollout may have no score).
    const judged = injection.judgeScore === undefined ? [] : [`judge ${fmt(injection.judgeScore)}`];
    const outcome =
      injection.action === 'escalate' && injection.strictScore !== undefined
        ? [...judged, `stricter judge ${fmt(injection.strictScore)}`]
        : injection.action === 'zero'
          ? [...judged, `scored ${fmt(injection.penaltyScore ?? 0)}`]
          : judged;
    // Whose text it was: the agent's own text (or a judge reply it made unreadable) is penalised;
    // text the environment produced is only shown to the judge as data.
    const whose =
      injection.cause === 'judge_reply_echo'
        ? "the judge's reply repeated the agent's text"
        : injection.origin === 'agent'
          ? "the agent's own text"
          : injection.origin === 'environment'
            ? 'text the environment produced'
            : '';
    const said = [whose, ...outcome].filter(Boolean).join(', ');
    return el('span', { class: 'injection', 'data-testid': 'injection-flag' }, [
      el('span', {
        class: 'badge flagged',
        text: `\u26a0 judge_injection_suspected: ${injection.action || 'flag'}${said ? ` (${said})` : ''}`,
      }),
      el(
        'div',
        { class: 'injection-spans' },
        spans
          .slice(0, 5)
          .map(
            /** @param {any} span */ (span) =>
              el('div', {
                text: `${span.rule} in ${span.source}: ${JSON.stringify(String(span.excerpt || '').slice(0, 120))}`,
              }),
          )
          .concat(
            spans.length > 5 || injection.spansOmitted
              ? [el('div', { text: `\u2026 ${spans.length - 5 + (injection.spansOmitted || 0)} more` })]
              : [],
          ),
      ),
    ]);
  }

  // The SWE grader's audit (rewardDetails.grading): why the rollout got its score, what of its change
  // was applied and dropped, and what the test runner saw tampered with.
  /** @param {any} details */
  function renderGradingAudit(details) {
    const audit = details.grading;
    if (!audit || typeof audit !== 'object' || typeof audit.reason !== 'string') return null;
    const alarming = audit.reason !== 'resolved' && audit.reason !== 'unresolved';
    /** @param {string} title @param {any} items @param {(item: any) => string} render */
    const list = (title, items, render) => {
      if (!Array.isArray(items) || items.length === 0) return null;
      return el('div', { 'data-testid': `grading-${title.split(' ')[0]}` }, [
        el('b', { text: `${title} (${items.length}): ` }),
        el(
          'ul',
          {},
          items.map((item) => el('li', { text: render(item) })),
        ),
      ]);
    };
    return el('div', { class: 'grading', 'data-testid': 'grading' }, [
      el('div', {}, [
        el('b', { text: 'grading: ' }),
        el('span', {
          class: `badge${alarming ? ' failed' : ''}`,
          'data-testid': 'grading-reason',
          text: audit.reason,
        }),
        ' ',
        el('span', { class: 'muted', text: audit.explanation || '' }),
      ]),
      list('tamper flags', audit.tamperFlags, (flag) => String(flag)),
      list('dropped changes', audit.dropped, (item) => `${item.change} ${item.path} \u2014 ${item.reason}`),
      list('applied changes', audit.applied, (item) => `${item.change} ${item.path}`),
      list('suspicious hints', audit.suspicious, (hint) => String(hint)),
      list('grading-time tests', audit.gradingFiles, (path) => String(path)),
    ]);
  }

  // Reward details beyond the known shapes: text with line breaks (a test run's output, a
  // verifier's log) shown as text, the rest as JSON.
  /** @param {Record<string, any>} rest */
  function renderOtherDetails(rest) {
    const keys = Object.keys(rest);
    if (keys.length === 0) return null;
    /** @type {Record<string, any>} */
    const plain = {};
    /** @type {HTMLElement[]} */
    const texts = [];
    keys.forEach((key) => {
      const value = rest[key];
      if (typeof value === 'string' && value.indexOf('\n') >= 0)
        texts.push(
          el('div', { class: 'detail-text', 'data-testid': 'detail-text' }, [
            el('div', { class: 'muted', text: key }),
            el('pre', { class: 'log', text: value }),
          ]),
        );
      else plain[key] = value;
    });
    return el('details', { 'data-testid': 'reward-details' }, [
      el('summary', { text: 'reward details' }),
      Object.keys(plain).length ? el('pre', { text: JSON.stringify(plain, null, 2) }) : null,
      ...texts,
    ]);
  }

  // Whitespace made visible: a space as a middle dot, newline and tab as arrows.
  /** @param {string} piece */
  function visibleToken(piece) {
    if (piece === '') return '\u2205';
    return piece.replace(/ /g, '\u00b7').replace(/\n/g, '\u21b5').replace(/\t/g, '\u21e5');
  }

  /** @param {any} tokens */
  function renderTokens(tokens) {
    const vocab = state.data?.vocab;
    const box = el('div', { class: 'tokens', 'data-testid': 'tokens' });
    (tokens.sequences || []).forEach(
      /** @param {any} sequence @param {number} sequenceIndex */ (sequence, sequenceIndex) => {
        const generated = sequence.masks.filter(/** @param {number} mask */ (mask) => mask !== -100).length;
        box.appendChild(
          el('div', {
            class: 'muted',
            text:
              'sequence ' +
              sequenceIndex +
              ': ' +
              sequence.tokens.length +
              ' tokens, ' +
              generated +
              ' generated' +
              (tokens.splits ? `, ${tokens.splits} splits` : ''),
          }),
        );
        const line = el('div', { class: 'token-line' });
        const limit = Math.min(sequence.tokens.length, TOKENS_SHOWN);
        for (let index = 0; index < limit; index++) {
          const masked = sequence.masks[index] === -100;
          const logprob = sequence.logprobs[index];
          const id = sequence.tokens[index];
          const piece = vocab ? vocab[id] : undefined;
          const title =
            'id ' +
            id +
            (piece !== undefined ? ` ${JSON.stringify(piece)}` : '') +
            (masked ? ' (prompt/tool, masked)' : ` (generated) logprob ${fmt(logprob, 3)}`);
          const opacity = masked ? 1 : Math.max(0.25, Math.min(1, Math.exp(logprob || 0)));
          line.appendChild(
            el('span', {
              class: masked ? 'tok masked' : 'tok gen',
              style: masked ? null : `opacity:${opacity.toFixed(2)}`,
              title: title,
              text: piece !== undefined ? visibleToken(piece) : String(id),
            }),
          );
        }
        if (limit < sequence.tokens.length)
          line.appendChild(
            el('span', { class: 'muted', text: ` \u2026 ${sequence.tokens.length - limit} more` }),
          );
        box.appendChild(line);
      },
    );
    return box;
  }

  /** @param {any} message */
  function renderMessage(message) {
    /** @type {HTMLElement[]} */
    const body = [];
    if (message.reasoning_content)
      body.push(el('div', { class: 'reasoning', text: message.reasoning_content }));
    const text = textOf(message.content);
    if (text)
      body.push(el('pre', { class: 'content', text: message.role === 'tool' ? prettyJson(text) : text }));
    (message.tool_calls || []).forEach(
      /** @param {any} call */ (call) => {
        body.push(
          el('div', { class: 'tool-call' }, [
            el('b', { text: `\u2192 ${call.function.name}` }),
            el('pre', { text: prettyJson(call.function.arguments) }),
          ]),
        );
      },
    );
    return el(
      'div',
      { class: `message role-${message.role}`, 'data-testid': 'message' },
      [el('div', { class: 'role', text: message.role + (message.name ? ` (${message.name})` : '') })].concat(
        body,
      ),
    );
  }

  /** @param {any} group @param {any} rollout @param {number} rolloutIndex */
  function renderRollout(group, rollout, rolloutIndex) {
    const advantage = group.advantages[rolloutIndex];
    const conversation = el('div', { class: 'conversation hidden' });
    const label = () => ` conversation (${rollout.messages.length} messages, ${rollout.turnsUsed} turns)`;
    const toggle = el('button', {
      class: 'expand',
      'data-testid': 'expand',
      text: `Show${label()}`,
      onclick: () => {
        if (conversation.childNodes.length === 0)
          rollout.messages.forEach(
            /** @param {any} message */ (message) => {
              conversation.appendChild(renderMessage(message));
            },
          );
        const hidden = conversation.classList.toggle('hidden');
        toggle.textContent = (hidden ? 'Show' : 'Hide') + label();
      },
    });
    const components = rollout.rewardComponents
      ? Object.keys(rollout.rewardComponents)
          .map((key) => `${key}=${fmt(rollout.rewardComponents[key])}`)
          .join('  ')
      : '';
    const details = rollout.rewardDetails || {};
    const diff =
      typeof details.diff === 'string'
        ? details.diff
        : typeof details.patch === 'string'
          ? details.patch
          : null;
    /** @type {Record<string, any>} */
    const rest = {};
    Object.keys(details).forEach((key) => {
      if (['diff', 'patch', 'verdicts', 'grading', 'droppedDiff'].indexOf(key) < 0) rest[key] = details[key];
    });
    return el(
      'div',
      {
        class: `rollout${rolloutMatches(rollout) ? '' : ' dim'}`,
        'data-testid': 'rollout',
        'data-rollout': String(rolloutIndex),
      },
      [
        el('div', { class: 'rollout-head' }, [
          el('span', { class: 'muted', text: `#${rolloutIndex}` }),
          el('span', {
            class: 'score',
            style: `background:${scoreColor(rollout.reward)}`,
            text: fmt(rollout.reward),
          }),
          el('span', { class: `badge outcome-${rollout.outcome}`, text: rollout.outcome }),
          el('span', {
            class: `advantage ${advantage > 0 ? 'pos' : advantage < 0 ? 'neg' : ''}`,
            'data-testid': 'advantage',
            text: `adv ${signed(advantage)}`,
          }),
        ]),
        rollout.outcomeReason ? el('div', { class: 'muted', text: rollout.outcomeReason }) : null,
        components ? el('div', { class: 'muted', text: components }) : null,
        el('div', {
          class: 'muted',
          text:
            rollout.modelId +
            ' \u00b7 ' +
            rollout.usage.totalTokens +
            ' tokens \u00b7 ' +
            fmt(rollout.wallTimeSeconds, 1) +
            ' s' +
            (rollout.attempts > 1 ? ` \u00b7 ${rollout.attempts} attempts` : ''),
        }),
        rollout.toolErrors?.length
          ? el(
              'div',
              { class: 'errors' },
              rollout.toolErrors.map(
                /** @param {any} error */ (error) =>
                  el('div', { text: `turn ${error.turn} ${error.toolName}: ${error.error}` }),
              ),
            )
          : null,
        renderVerdicts(details),
        renderGradingAudit(details),
        diff ? renderDiff(diff) : null,
        typeof details.droppedDiff === 'string' && details.droppedDiff
          ? el('details', { 'data-testid': 'dropped-diff' }, [
              el('summary', { text: 'dropped part of the change' }),
              renderDiff(details.droppedDiff),
            ])
          : null,
        renderOtherDetails(rest),
        rollout.finalResponse
          ? el('div', { class: 'final' }, [el('b', { text: 'Final: ' }), rollout.finalResponse])
          : null,
        toggle,
        conversation,
        rollout.tokens ? renderTokens(rollout.tokens) : null,
      ],
    );
  }

  /**
   * A rollout's turns: each assistant message with the tool results that answer it.
   * @param {any} rollout
   * @returns {Array<{ assistant: any, results: any[] }>}
   */
  function turnsOf(rollout) {
    /** @type {Array<{ assistant: any, results: any[] }>} */
    const turns = [];
    rollout.messages.forEach(
      /** @param {any} message */ (message) => {
        if (message.role === 'assistant') turns.push({ assistant: message, results: [] });
        else if (message.role === 'tool' && turns.length) turns[turns.length - 1]?.results.push(message);
      },
    );
    return turns;
  }

  /** One line of a tool call: name and its arguments, shortened. @param {any} call */
  function callLine(call) {
    let args = call.function.arguments;
    try {
      const parsed = JSON.parse(args);
      const values = parsed && typeof parsed === 'object' ? Object.values(parsed) : [parsed];
      args = values.map((value) => (typeof value === 'string' ? value : JSON.stringify(value))).join(' ');
    } catch (_error) {
      // Not JSON: shown as the model wrote it.
    }
    return `${call.function.name} ${args}`;
  }

  /** @param {any} result */
  function resultFailed(result) {
    const text = textOf(result.content);
    try {
      const parsed = JSON.parse(text);
      return !!(
        parsed &&
        typeof parsed === 'object' &&
        (parsed.error || (parsed.exit_code && parsed.exit_code !== 0))
      );
    } catch (_error) {
      return /^error/i.test(text);
    }
  }

  // Aligned mode: one column per rollout, one row per turn, so 8-16 rollouts compare at a glance.
  /** @param {any} group */
  function renderAligned(group) {
    const turns = group.rollouts.map(turnsOf);
    const depth = Math.max(0, ...turns.map(/** @param {any[]} list */ (list) => list.length));
    const columns = `grid-template-columns: 3.2em repeat(${group.rollouts.length}, minmax(58px, 1fr))`;
    /** @type {HTMLElement[]} */
    const cells = [el('div', { class: 'cell corner', text: 'turn' })];
    group.rollouts.forEach(
      /** @param {any} rollout @param {number} rolloutIndex */ (rollout, rolloutIndex) => {
        const node = chip(group, rollout, rolloutIndex, 'aligned-chip');
        node.addEventListener('click', () => {
          showRollout(rolloutIndex);
        });
        const advantage = group.advantages[rolloutIndex];
        cells.push(
          el('div', { class: `cell head${rolloutMatches(rollout) ? '' : ' dim'}` }, [
            node,
            el('span', {
              class: `advantage ${advantage > 0 ? 'pos' : advantage < 0 ? 'neg' : ''}`,
              text: signed(advantage),
            }),
            rollout.outcome !== 'scored'
              ? el('div', { class: `badge outcome-${rollout.outcome}`, text: rollout.outcome })
              : null,
          ]),
        );
      },
    );
    for (let turn = 0; turn < depth; turn++) {
      cells.push(el('div', { class: 'cell turn-number', text: String(turn + 1) }));
      group.rollouts.forEach(
        /** @param {any} _rollout @param {number} rolloutIndex */ (_rollout, rolloutIndex) => {
          const entry = turns[rolloutIndex][turn];
          if (!entry) {
            cells.push(el('div', { class: 'cell empty' }));
            return;
          }
          const calls = entry.assistant.tool_calls || [];
          const said = textOf(entry.assistant.content);
          /** @type {HTMLElement[]} */
          const lines = calls.map(
            /** @param {any} call @param {number} callIndex */ (call, callIndex) => {
              const result = entry.results[callIndex];
              const failed = result ? resultFailed(result) : false;
              return el('div', {
                class: `call${failed ? ' failed' : ''}`,
                title: callLine(call) + (result ? `\n\u2192 ${textOf(result.content).slice(0, 600)}` : ''),
                text: (failed ? '\u2717 ' : '') + callLine(call),
              });
            },
          );
          if (said && !calls.length) lines.push(el('div', { class: 'said', title: said, text: said }));
          cells.push(
            el(
              'div',
              {
                class: 'cell',
                'data-testid': 'aligned-cell',
                onclick: () => {
                  showRollout(rolloutIndex);
                },
              },
              lines,
            ),
          );
        },
      );
    }
    return el('div', { class: 'aligned', 'data-testid': 'aligned', style: columns }, cells);
  }

  /** @type {number | null} */
  let focusRollout = null;
  function renderDetail() {
    const pane = byId('detail');
    const selected = state.selected;
    const group = selected >= 0 ? recordIfLoaded(selected) : undefined;
    if (selected >= 0 && !group) {
      if (pane.getAttribute('data-loading') === String(selected)) return;
      pane.setAttribute('data-loading', String(selected));
      pane.textContent = '';
      pane.appendChild(el('div', { class: 'empty-detail muted', text: 'opening the group\u2026' }));
      loadRecord(selected).then(
        (record) => {
          if (pane.getAttribute('data-loading') !== String(selected)) return;
          pane.removeAttribute('data-loading');
          if (state.selected !== selected) return;
          renderGroupDetail(pane, record);
        },
        (error) => {
          if (pane.getAttribute('data-loading') !== String(selected)) return;
          pane.removeAttribute('data-loading');
          pane.textContent = '';
          pane.appendChild(
            el('div', {
              class: 'empty-detail',
              'data-testid': 'detail-error',
              text: `Could not open the group: ${error}`,
            }),
          );
        },
      );
      return;
    }
    pane.removeAttribute('data-loading');
    pane.textContent = '';
    if (!group) {
      pane.appendChild(
        el('div', {
          class: 'empty-detail',
          'data-testid': 'no-match',
          text: 'No group matches the filters.',
        }),
      );
      return;
    }
    renderGroupDetail(pane, group);
  }

  /** @param {HTMLElement} pane @param {any} group */
  function renderGroupDetail(pane, group) {
    pane.textContent = '';
    pane.setAttribute('data-group', group.groupId);
    const counted = group.rollouts.filter(
      /** @param {any} rollout */ (rollout) => rollout.reward !== null && rollout.reward !== undefined,
    ).length;
    pane.appendChild(
      el('div', { class: 'detail-head' }, [
        el('h2', { text: group.taskId }),
        el('div', {
          class: 'muted',
          'data-testid': 'group-summary',
          text:
            'group ' +
            group.groupId +
            ' \u00b7 ' +
            group.rollouts.length +
            ' rollouts (' +
            counted +
            ' scored) \u00b7 mean ' +
            fmt(meanOf(group)) +
            ' \u00b1 ' +
            fmt(group.stats?.std) +
            ' \u00b7 ' +
            group.advantageMethod +
            (group.dropped ? ` \u00b7 dropped: ${group.dropped.reason}` : ''),
        }),
        el('div', { class: 'prompt', text: group.item?.prompt || '' }),
      ]),
    );
    pane.appendChild(renderAligned(group));
    pane.appendChild(
      el(
        'div',
        { class: 'rollouts', 'data-testid': 'rollouts' },
        group.rollouts.map(
          /** @param {any} rollout @param {number} index */ (rollout, index) =>
            renderRollout(group, rollout, index),
        ),
      ),
    );
    if (focusRollout !== null) {
      const rollout = focusRollout;
      focusRollout = null;
      showRollout(rollout);
    }
  }

  function renderSummary() {
    /** @type {Record<string, number>} */
    const counts = {};
    let sum = 0;
    let scored = 0;
    state.groups.forEach((group) => {
      group.rollouts.forEach(
        /** @param {any} rollout */ (rollout) => {
          counts[rollout.outcome] = (counts[rollout.outcome] || 0) + 1;
          if (rollout.reward !== null && rollout.reward !== undefined) {
            sum += rollout.reward;
            scored++;
          }
        },
      );
    });
    const parts = [`${state.groups.length} groups`, `mean reward ${fmt(scored ? sum / scored : null)}`];
    Object.keys(counts)
      .sort()
      .forEach((key) => {
        parts.push(`${key} ${counts[key]}`);
      });
    byId('summary').textContent = parts.join(' \u00b7 ');
    const select = /** @type {HTMLSelectElement} */ (byId('outcome'));
    const current = select.value;
    select.textContent = '';
    select.appendChild(el('option', { value: 'all', text: 'all' }));
    Object.keys(counts)
      .sort()
      .forEach((key) => {
        select.appendChild(el('option', { value: key, text: `${key} (${counts[key]})` }));
      });
    select.value = current in counts || current === 'all' ? current : 'all';
  }

  // `shears evaluate`'s report: pass@k and mean score, each with its interval.
  function renderEvaluation() {
    const evaluation = state.data.evaluation;
    const node = byId('evaluation');
    if (!evaluation) return;
    const percent = Math.round((evaluation.meanScore.confidence || 0.95) * 100);
    /** @type {Array<Node | string>} */
    const parts = Object.keys(evaluation.passAtK).map((key) => {
      const value = evaluation.passAtK[key];
      return el('span', {
        class: 'metric',
        'data-testid': 'pass-at-k',
        title: `${percent}% bootstrap interval over ${evaluation.tasks} tasks`,
        text: `${key} ${fmt(value.mean, 3)} [${fmt(value.low, 3)}, ${fmt(value.high, 3)}]`,
      });
    });
    parts.push(
      el('span', {
        class: 'metric',
        'data-testid': 'mean-score',
        text:
          'mean score ' +
          fmt(evaluation.meanScore.mean, 3) +
          ' [' +
          fmt(evaluation.meanScore.low, 3) +
          ', ' +
          fmt(evaluation.meanScore.high, 3) +
          ']',
      }),
      el('span', {
        class: 'muted',
        text:
          percent +
          '% CI, ' +
          evaluation.tasks +
          ' tasks, k=' +
          evaluation.k +
          (evaluation.complete ? '' : ` \u00b7 INCOMPLETE: ${evaluation.missing} tasks missing`),
      }),
    );
    node.append(...parts);
  }

  /** @param {string} id */
  function readNumber(id) {
    const text = inputById(id).value;
    return text === '' ? null : Number(text);
  }

  /** @param {'trajectories' | 'dashboard'} name */
  function showTab(name) {
    byId('view-trajectories').classList.toggle('hidden', name !== 'trajectories');
    byId('view-dashboard').classList.toggle('hidden', name !== 'dashboard');
    byId('tab-trajectories').classList.toggle('active', name === 'trajectories');
    byId('tab-dashboard').classList.toggle('active', name === 'dashboard');
    if (name === 'dashboard') openDashboard();
    if (name === 'trajectories') renderRows(true);
  }

  // Called by the dashboard when a chart point is clicked: those groups, in the trajectory view.
  /** @param {{ label: string, groupIds: string[], outcome?: string, task?: string }} selection */
  function openSelection(selection) {
    state.filters.selection = {
      label: selection.label,
      groupIds: new Set(selection.groupIds),
      ...(selection.outcome ? { outcome: selection.outcome } : {}),
    };
    if (selection.task !== undefined) {
      inputById('search').value = selection.task;
      state.filters.search = selection.task;
    }
    showTab('trajectories');
    byId('list').scrollTop = 0;
    state.selected = -1;
    applyFilters();
  }

  async function openDashboard() {
    const container = byId('view-dashboard');
    if (!state.dashboard) {
      container.textContent = 'reading the metrics\u2026';
      try {
        await loadMetrics();
      } catch (error) {
        container.textContent = `Could not read the embedded metrics: ${error}`;
        return;
      }
      if (!state.dashboard) renderDashboard();
    }
    if (state.dashboard && !container.classList.contains('hidden')) state.dashboard.resize();
  }

  function renderDashboard() {
    const container = byId('view-dashboard');
    if (!window.shearsDashboard) {
      container.textContent = 'The dashboard script did not load.';
      return;
    }
    container.textContent = '';
    state.dashboard = window.shearsDashboard({
      container: container,
      metrics: state.data.metrics || [],
      groups: state.groups,
      onOpen: openSelection,
    });
  }

  // `shears view --watch`: new groups and metrics rows arrive from the local server.
  function startLive() {
    const live = state.data.live;
    if (!live) return;
    const status = byId('live');
    let offsets = { groups: live.groupsOffset || 0, metrics: live.metricsOffset || 0 };
    const poll = async () => {
      try {
        const response = await fetch(
          `${live.updatesPath}?groups=${offsets.groups}&metrics=${offsets.metrics}`,
          {
            cache: 'no-store',
          },
        );
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const update = await response.json();
        offsets = { groups: update.groupsOffset, metrics: update.metricsOffset };
        if (update.groups.length || update.metrics.length) {
          update.groups.forEach(
            /** @param {any} group */ (group) => {
              records.set(state.groups.length, group);
              state.groups.push(group);
              state.hay.push(hayOf(group));
            },
          );
          if (update.metrics.length) state.data.metrics = (state.data.metrics || []).concat(update.metrics);
          renderSummary();
          applyFilters();
          if (state.dashboard) state.dashboard.update(state.data.metrics || [], state.groups);
        }
        status.textContent = `live \u00b7 ${state.groups.length} groups \u00b7 updated ${new Date().toLocaleTimeString()}`;
        document.body.setAttribute('data-live-groups', String(state.groups.length));
      } catch (error) {
        status.textContent = `live: the watch server stopped answering (${error}); the page keeps what it has`;
      }
      setTimeout(poll, live.intervalMs);
    };
    status.textContent = 'live';
    setTimeout(poll, live.intervalMs);
  }

  async function main() {
    try {
      state.data = await decode();
    } catch (error) {
      byId('summary').textContent = `Could not read the embedded data: ${error}`;
      return;
    }
    TOKENS_SHOWN = state.data.tokensShown || TOKENS_SHOWN;
    state.groups = state.data.index || [];
    state.hay = state.groups.map(hayOf);
    await yieldToPage();
    if (state.data.meta?.title) document.title = state.data.meta.title;
    byId('meta').textContent = state.data.meta?.description || '';
    renderSummary();
    renderEvaluation();
    await yieldToPage();
    const rerun = () => {
      state.filters.min = readNumber('min-score');
      state.filters.max = readNumber('max-score');
      state.filters.outcome = inputById('outcome').value;
      state.filters.search = inputById('search').value.trim();
      state.filters.dropped = inputById('show-dropped').checked;
      state.filters.sort = inputById('sort').value;
      applyFilters();
    };
    ['min-score', 'max-score', 'search'].forEach((id) => {
      byId(id).addEventListener('input', rerun);
    });
    ['outcome', 'show-dropped', 'sort'].forEach((id) => {
      byId(id).addEventListener('change', rerun);
    });
    byId('tab-trajectories').addEventListener('click', () => {
      showTab('trajectories');
    });
    byId('tab-dashboard').addEventListener('click', () => {
      showTab('dashboard');
    });
    let pending = false;
    byId('list').addEventListener('scroll', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        renderRows(false);
      });
    });
    window.addEventListener('resize', () => {
      renderRows(true);
    });
    applyFilters();
    startLive();
    document.body.setAttribute('data-record-blocks-read', String(blocksRead));
    document.body.setAttribute('data-ready', 'true');
  }
  main();
})();
