// The trajectory viewer's browser code, embedded verbatim into the static HTML file. Plain
// ES2020 without template literals, so it can live in a TS string. The list of groups is
// virtualised (only visible rows exist in the DOM), so 10,000 trajectories stay responsive.
/** Tokens shown per sequence in the token view (the page says how many more there are). */
export const TOKENS_SHOWN_PER_SEQUENCE = 3000;

export const VIEWER_SCRIPT = String.raw`
(function () {
  'use strict';
  var TOKENS_SHOWN = ${TOKENS_SHOWN_PER_SEQUENCE};
  var ROW_HEIGHT = 44;
  var OVERSCAN = 8;
  var state = { data: null, groups: [], visible: [], selected: -1, filters: { min: null, max: null, outcome: 'all', search: '', dropped: true } };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (attrs[key] === undefined || attrs[key] === null) continue;
        if (key === 'text') node.textContent = attrs[key];
        else if (key === 'class') node.className = attrs[key];
        else if (key.indexOf('on') === 0) node.addEventListener(key.slice(2), attrs[key]);
        else node.setAttribute(key, attrs[key]);
      }
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }
  function fmt(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return '\u2013';
    return Number(value).toFixed(digits === undefined ? 2 : digits);
  }
  function textOf(content) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) return content.map(function (part) { return part && typeof part.text === 'string' ? part.text : ''; }).join('');
    return JSON.stringify(content);
  }
  function scoreColor(score) {
    if (score === null || score === undefined) return '#9aa0a6';
    var s = Math.max(0, Math.min(1, score));
    var hue = Math.round(s * 120);
    return 'hsl(' + hue + ', 60%, 42%)';
  }
  function prettyJson(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (error) { return text; }
  }

  async function decode() {
    var node = document.getElementById('shears-data');
    var raw = node.textContent.trim();
    var binary = atob(raw);
    var bytes = new Uint8Array(binary.length);
    for (var index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
    if (node.getAttribute('data-encoding') === 'gzip' && typeof DecompressionStream !== 'undefined') {
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      return JSON.parse(await new Response(stream).text());
    }
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  function groupMatches(group) {
    var f = state.filters;
    if (!f.dropped && group.dropped) return false;
    if (f.search) {
      var needle = f.search.toLowerCase();
      var hay = (group.taskId + ' ' + (group.item && group.item.prompt || '') + ' ' + group.groupId).toLowerCase();
      if (hay.indexOf(needle) < 0) return false;
    }
    return group.rollouts.some(function (rollout) { return rolloutMatches(rollout); });
  }
  function rolloutMatches(rollout) {
    var f = state.filters;
    if (f.outcome !== 'all' && rollout.outcome !== f.outcome) return false;
    if (f.min !== null || f.max !== null) {
      if (rollout.reward === null || rollout.reward === undefined) return false;
      if (f.min !== null && rollout.reward < f.min) return false;
      if (f.max !== null && rollout.reward > f.max) return false;
    }
    return true;
  }

  function applyFilters() {
    state.visible = [];
    for (var index = 0; index < state.groups.length; index++) if (groupMatches(state.groups[index])) state.visible.push(index);
    var rollouts = 0;
    state.visible.forEach(function (index) { rollouts += state.groups[index].rollouts.filter(rolloutMatches).length; });
    document.getElementById('count').textContent = state.visible.length + ' of ' + state.groups.length + ' groups \u00b7 ' + rollouts + ' matching rollouts';
    document.getElementById('spacer').style.height = (state.visible.length * ROW_HEIGHT) + 'px';
    renderRows(true);
    if (state.selected >= 0) renderDetail();
  }

  var lastRange = '';
  function renderRows(force) {
    var list = document.getElementById('list');
    var rows = document.getElementById('rows');
    var first = Math.max(0, Math.floor(list.scrollTop / ROW_HEIGHT) - OVERSCAN);
    var last = Math.min(state.visible.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    var range = first + ':' + last;
    if (!force && range === lastRange) return;
    lastRange = range;
    rows.textContent = '';
    for (var position = first; position < last; position++) {
      rows.appendChild(renderRow(state.visible[position], position));
    }
  }

  function renderRow(index, position) {
    var group = state.groups[index];
    var chips = group.rollouts.map(function (rollout, rolloutIndex) {
      var matches = rolloutMatches(rollout);
      return el('span', {
        class: 'chip' + (matches ? '' : ' dim') + (rollout.outcome !== 'scored' ? ' outcome-' + rollout.outcome : ''),
        style: 'background:' + scoreColor(rollout.reward),
        title: 'rollout ' + rolloutIndex + ': ' + rollout.outcome + ', reward ' + fmt(rollout.reward) + ', advantage ' + fmt(group.advantages[rolloutIndex]),
        text: rollout.reward === null || rollout.reward === undefined ? '\u00d7' : fmt(rollout.reward, 1),
      });
    });
    return el('div', {
      class: 'row' + (index === state.selected ? ' selected' : ''),
      style: 'top:' + (position * ROW_HEIGHT) + 'px',
      'data-testid': 'group-row',
      'data-group': group.groupId,
      onclick: function () { select(index); },
    }, [
      el('span', { class: 'task', text: group.taskId }),
      el('span', { class: 'chips' }, chips),
      el('span', { class: 'mean', text: 'mean ' + fmt(group.stats && group.stats.mean) }),
      group.dropped ? el('span', { class: 'badge dropped', text: 'dropped' }) : null,
    ]);
  }

  function select(index) {
    state.selected = index;
    renderRows(true);
    renderDetail();
  }

  function renderDiff(text) {
    var pre = el('pre', { class: 'diff' });
    text.split('\n').forEach(function (line) {
      var cls = line.indexOf('+++') === 0 || line.indexOf('---') === 0 ? 'meta' : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : line.indexOf('@@') === 0 ? 'hunk' : '';
      pre.appendChild(el('span', { class: cls, text: line + '\n' }));
    });
    return pre;
  }

  // rewardDetails.verdicts: VerdictRecords (@shears/core verdictRecordSchema), the one shape the
  // group runner and judgeReward write.
  function renderVerdicts(details) {
    var list = details.verdicts;
    if (!Array.isArray(list) || list.length === 0) return null;
    return el('div', { class: 'verdicts', 'data-testid': 'verdicts' }, list.map(function (verdict) {
      return el('div', { class: 'verdict' }, [
        el('b', { text: verdict.judge + ': ' }),
        verdict.status === 'failed' ? el('span', { class: 'badge failed', text: 'failed: ' + (verdict.reason || '') }) : el('span', { text: 'score ' + fmt(verdict.score) }),
        renderInjectionFlag(verdict),
        verdict.rationale ? el('div', { class: 'rationale', text: verdict.rationale }) : null,
      ]);
    }));
  }

  // A verdict the judges' screen flagged (details.injection from @shears/judges): the flag beside
  // the score, what followed, and the suspicious spans.
  function renderInjectionFlag(verdict) {
    var injection = verdict.details && verdict.details.injection;
    if (!injection || !injection.suspected) return null;
    var spans = Array.isArray(injection.spans) ? injection.spans : [];
    var outcome = injection.action === 'escalate' && injection.strictScore !== undefined
      ? ' (judge ' + fmt(injection.judgeScore) + ', stricter judge ' + fmt(injection.strictScore) + ')'
      : injection.action === 'zero' ? ' (judge ' + fmt(injection.judgeScore) + ', scored 0)' : '';
    return el('span', { class: 'injection', 'data-testid': 'injection-flag' }, [
      el('span', { class: 'badge flagged', text: '⚠ judge_injection_suspected: ' + (injection.action || 'flag') + outcome }),
      el('div', { class: 'injection-spans' }, spans.slice(0, 5).map(function (span) {
        return el('div', { text: span.rule + ' in ' + span.source + ': ' + JSON.stringify(String(span.excerpt || '').slice(0, 120)) });
      }).concat(spans.length > 5 || injection.spansOmitted ? [el('div', { text: '… ' + (spans.length - 5 + (injection.spansOmitted || 0)) + ' more' })] : [])),
    ]);
  }

  // The SWE grader's audit (rewardDetails.grading): why the rollout got its score, what of its change
  // was applied and dropped, and what the test runner saw tampered with.
  function renderGradingAudit(details) {
    var audit = details.grading;
    if (!audit || typeof audit !== 'object' || typeof audit.reason !== 'string') return null;
    var alarming = audit.reason !== 'resolved' && audit.reason !== 'unresolved';
    var list = function (title, items, render) {
      if (!Array.isArray(items) || items.length === 0) return null;
      return el('div', { 'data-testid': 'grading-' + title.split(' ')[0] }, [el('b', { text: title + ' (' + items.length + '): ' }), el('ul', {}, items.map(function (item) { return el('li', { text: render(item) }); }))]);
    };
    return el('div', { class: 'grading', 'data-testid': 'grading' }, [
      el('div', {}, [el('b', { text: 'grading: ' }), el('span', { class: 'badge' + (alarming ? ' failed' : ''), 'data-testid': 'grading-reason', text: audit.reason }), ' ', el('span', { class: 'muted', text: audit.explanation || '' })]),
      list('tamper flags', audit.tamperFlags, function (flag) { return String(flag); }),
      list('dropped changes', audit.dropped, function (item) { return item.change + ' ' + item.path + ' — ' + item.reason; }),
      list('applied changes', audit.applied, function (item) { return item.change + ' ' + item.path; }),
      list('suspicious hints', audit.suspicious, function (hint) { return String(hint); }),
      list('grading-time tests', audit.gradingFiles, function (path) { return String(path); }),
    ]);
  }

  // Whitespace made visible: a space as a middle dot, newline and tab as arrows.
  function visibleToken(piece) {
    if (piece === '') return '\u2205';
    return piece.replace(/ /g, '\u00b7').replace(/\n/g, '\u21b5').replace(/\t/g, '\u21e5');
  }

  function renderTokens(tokens) {
    var vocab = state.data && state.data.vocab;
    var box = el('div', { class: 'tokens', 'data-testid': 'tokens' });
    (tokens.sequences || []).forEach(function (sequence, sequenceIndex) {
      var generated = sequence.masks.filter(function (mask) { return mask !== -100; }).length;
      box.appendChild(el('div', { class: 'muted', text: 'sequence ' + sequenceIndex + ': ' + sequence.tokens.length + ' tokens, ' + generated + ' generated' + (tokens.splits ? ', ' + tokens.splits + ' splits' : '') }));
      var line = el('div', { class: 'token-line' });
      var limit = Math.min(sequence.tokens.length, TOKENS_SHOWN);
      for (var index = 0; index < limit; index++) {
        var masked = sequence.masks[index] === -100;
        var logprob = sequence.logprobs[index];
        var id = sequence.tokens[index];
        var piece = vocab ? vocab[id] : undefined;
        var title = 'id ' + id + (piece !== undefined ? ' ' + JSON.stringify(piece) : '') + (masked ? ' (prompt/tool, masked)' : ' (generated) logprob ' + fmt(logprob, 3));
        var opacity = masked ? 1 : Math.max(0.25, Math.min(1, Math.exp(logprob || 0)));
        line.appendChild(el('span', { class: masked ? 'tok masked' : 'tok gen', style: masked ? null : 'opacity:' + opacity.toFixed(2), title: title, text: piece !== undefined ? visibleToken(piece) : String(id) }));
      }
      if (limit < sequence.tokens.length) line.appendChild(el('span', { class: 'muted', text: ' \u2026 ' + (sequence.tokens.length - limit) + ' more' }));
      box.appendChild(line);
    });
    return box;
  }

  function renderMessage(message) {
    var body = [];
    if (message.reasoning_content) body.push(el('div', { class: 'reasoning', text: message.reasoning_content }));
    var text = textOf(message.content);
    if (text) body.push(el('pre', { class: 'content', text: message.role === 'tool' ? prettyJson(text) : text }));
    (message.tool_calls || []).forEach(function (call) {
      body.push(el('div', { class: 'tool-call' }, [
        el('b', { text: '\u2192 ' + call.function.name }),
        el('pre', { text: prettyJson(call.function.arguments) }),
      ]));
    });
    return el('div', { class: 'message role-' + message.role, 'data-testid': 'message' }, [el('div', { class: 'role', text: message.role + (message.name ? ' (' + message.name + ')' : '') })].concat(body));
  }

  function renderRollout(group, rollout, rolloutIndex) {
    var advantage = group.advantages[rolloutIndex];
    var conversation = el('div', { class: 'conversation hidden' });
    var toggle = el('button', {
      class: 'expand', 'data-testid': 'expand',
      text: 'Show conversation (' + rollout.messages.length + ' messages, ' + rollout.turnsUsed + ' turns)',
      onclick: function () {
        if (conversation.childNodes.length === 0) rollout.messages.forEach(function (message) { conversation.appendChild(renderMessage(message)); });
        var hidden = conversation.classList.toggle('hidden');
        toggle.textContent = (hidden ? 'Show' : 'Hide') + ' conversation (' + rollout.messages.length + ' messages, ' + rollout.turnsUsed + ' turns)';
      },
    });
    var components = rollout.rewardComponents ? Object.keys(rollout.rewardComponents).map(function (key) { return key + '=' + fmt(rollout.rewardComponents[key]); }).join('  ') : '';
    var details = rollout.rewardDetails || {};
    var diff = typeof details.diff === 'string' ? details.diff : typeof details.patch === 'string' ? details.patch : null;
    var rest = {};
    Object.keys(details).forEach(function (key) { if (['diff', 'patch', 'verdicts', 'grading', 'droppedDiff'].indexOf(key) < 0) rest[key] = details[key]; });
    return el('div', { class: 'rollout' + (rolloutMatches(rollout) ? '' : ' dim'), 'data-testid': 'rollout' }, [
      el('div', { class: 'rollout-head' }, [
        el('span', { class: 'score', style: 'background:' + scoreColor(rollout.reward), text: fmt(rollout.reward) }),
        el('span', { class: 'badge outcome-' + rollout.outcome, text: rollout.outcome }),
        el('span', { class: 'muted', text: 'adv ' + fmt(advantage) }),
      ]),
      rollout.outcomeReason ? el('div', { class: 'muted', text: rollout.outcomeReason }) : null,
      components ? el('div', { class: 'muted', text: components }) : null,
      el('div', { class: 'muted', text: rollout.modelId + ' \u00b7 ' + rollout.usage.totalTokens + ' tokens \u00b7 ' + fmt(rollout.wallTimeSeconds, 1) + ' s' + (rollout.attempts > 1 ? ' \u00b7 ' + rollout.attempts + ' attempts' : '') }),
      rollout.toolErrors && rollout.toolErrors.length ? el('div', { class: 'errors' }, rollout.toolErrors.map(function (error) { return el('div', { text: 'turn ' + error.turn + ' ' + error.toolName + ': ' + error.error }); })) : null,
      renderVerdicts(details),
      renderGradingAudit(details),
      diff ? renderDiff(diff) : null,
      typeof details.droppedDiff === 'string' && details.droppedDiff ? el('details', { 'data-testid': 'dropped-diff' }, [el('summary', { text: 'dropped part of the change' }), renderDiff(details.droppedDiff)]) : null,
      Object.keys(rest).length ? el('details', {}, [el('summary', { text: 'reward details' }), el('pre', { text: JSON.stringify(rest, null, 2) })]) : null,
      rollout.finalResponse ? el('div', { class: 'final' }, [el('b', { text: 'Final: ' }), rollout.finalResponse]) : null,
      toggle,
      conversation,
      rollout.tokens ? renderTokens(rollout.tokens) : null,
    ]);
  }

  function renderDetail() {
    var pane = document.getElementById('detail');
    pane.textContent = '';
    var group = state.groups[state.selected];
    if (!group) return;
    pane.appendChild(el('div', { class: 'detail-head' }, [
      el('h2', { text: group.taskId }),
      el('div', { class: 'muted', text: 'group ' + group.groupId + ' \u00b7 ' + group.rollouts.length + ' rollouts \u00b7 mean ' + fmt(group.stats.mean) + ' \u00b1 ' + fmt(group.stats.std) + ' \u00b7 ' + group.advantageMethod + (group.dropped ? ' \u00b7 dropped: ' + group.dropped.reason : '') }),
      el('div', { class: 'prompt', text: group.item && group.item.prompt || '' }),
    ]));
    pane.appendChild(el('div', { class: 'rollouts', 'data-testid': 'rollouts', style: 'grid-template-columns: repeat(' + group.rollouts.length + ', minmax(300px, 1fr))' }, group.rollouts.map(function (rollout, index) { return renderRollout(group, rollout, index); })));
  }

  function renderSummary() {
    var counts = {};
    var rewards = [];
    state.groups.forEach(function (group) {
      group.rollouts.forEach(function (rollout) {
        counts[rollout.outcome] = (counts[rollout.outcome] || 0) + 1;
        if (rollout.reward !== null && rollout.reward !== undefined) rewards.push(rollout.reward);
      });
    });
    var mean = rewards.length ? rewards.reduce(function (a, b) { return a + b; }, 0) / rewards.length : null;
    var parts = [state.groups.length + ' groups', 'mean reward ' + fmt(mean)];
    Object.keys(counts).sort().forEach(function (key) { parts.push(key + ' ' + counts[key]); });
    document.getElementById('summary').textContent = parts.join(' \u00b7 ');
    var select = document.getElementById('outcome');
    Object.keys(counts).sort().forEach(function (key) { select.appendChild(el('option', { value: key, text: key + ' (' + counts[key] + ')' })); });
  }

  function readNumber(id) {
    var value = document.getElementById(id).value;
    return value === '' ? null : Number(value);
  }

  async function main() {
    try {
      state.data = await decode();
    } catch (error) {
      document.getElementById('summary').textContent = 'Could not read the embedded data: ' + error;
      return;
    }
    state.groups = state.data.groups || [];
    if (state.data.meta && state.data.meta.title) document.title = state.data.meta.title;
    document.getElementById('meta').textContent = state.data.meta && state.data.meta.description || '';
    renderSummary();
    var rerun = function () {
      state.filters.min = readNumber('min-score');
      state.filters.max = readNumber('max-score');
      state.filters.outcome = document.getElementById('outcome').value;
      state.filters.search = document.getElementById('search').value.trim();
      state.filters.dropped = document.getElementById('show-dropped').checked;
      applyFilters();
    };
    ['min-score', 'max-score', 'search'].forEach(function (id) { document.getElementById(id).addEventListener('input', rerun); });
    ['outcome', 'show-dropped'].forEach(function (id) { document.getElementById(id).addEventListener('change', rerun); });
    var pending = false;
    document.getElementById('list').addEventListener('scroll', function () {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; renderRows(false); });
    });
    window.addEventListener('resize', function () { renderRows(true); });
    applyFilters();
    if (state.visible.length) select(state.visible[0]);
    document.body.setAttribute('data-ready', 'true');
  }
  main();
})();
`;
