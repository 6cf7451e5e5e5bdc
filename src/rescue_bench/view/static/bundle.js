// rescue-bench view, static bundle: instances.html draws every instance list and instance page from the
// bundle's data files. A data file is a script, data/NAME.js, calling RB.put(NAME, base64 of gzip JSON): a
// <script> element loads it from file:// as from any static server, DecompressionStream unpacks it.
// Every text goes into the page as textContent (never as HTML): model replies and transcripts are hostile.
"use strict";

const RB = {
  waiting: new Map(),
  cache: new Map(),
  put(name, text) {
    const resolve = RB.waiting.get(name);
    if (resolve) resolve(text);
  },
};
window.RB = RB;

async function unpack(text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function load(name) {
  if (!RB.cache.has(name)) {
    const found = new Promise((resolve, reject) => {
      RB.waiting.set(name, resolve);
      const script = document.createElement("script");
      script.src = `data/${name}.js`;
      script.onerror = () => reject(new Error(`data/${name}.js could not be loaded`));
      document.head.appendChild(script);
    }).then(unpack);
    RB.cache.set(name, found);
  }
  return RB.cache.get(name);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const muted = (text) => el("span", { class: "muted", text });
const fixed = (value) => (value === null || value === undefined ? "–" : Number(value).toFixed(2));
const json = (value) => JSON.stringify(value, null, 2);
const hashOf = (params) => "#" + new URLSearchParams(params).toString();

function verdict(correct, present = true) {
  if (!present) return muted("absent");
  if (correct === true) return el("span", { class: "ok", text: "right" });
  if (correct === false) return el("span", { class: "bad", text: "wrong" });
  return muted("–");
}

function num(value) {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, "");
  if (value === null || value === undefined) return "–";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function scoreSpans(scores) {
  return Object.entries(scores || {}).map(([k, v]) => [el("span", { class: "score", text: `${k} = ${num(v)}` }), " "]);
}

async function rowsOf(meta, run, task) {
  const raw = await load(`rows-${run.index}-${task}`);
  return raw.map((values) => Object.fromEntries(meta.fields.map((f, i) => [f, values[i]])));
}

const SORTS = {
  position: (r) => [r.position],
  sample: (r) => [r.sample, r.row],
  repeat: (r) => [r.repeat, r.position],
  gold: (r) => [r.gold, r.position],
  pred: (r) => [r.pred, r.position],
  correct: (r) => [r.correct === null, Boolean(r.correct), r.position],
  failure: (r) => [r.failure, r.position],
  judge: (r) => [r.judge === null, r.judge || 0, r.position],
  disagreement: (r) => [r.disagree === null, r.disagree || 0, r.position],
};

function compareKeys(a, b) {
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] < b[i]) return -1;
    if (a[i] > b[i]) return 1;
  }
  return 0;
}

function otherMatches(mine, theirs, how) {
  if (!theirs) return false;
  if (how === "differ") return mine.pred !== theirs.pred;
  if (mine.correct === null || theirs.correct === null) return false;
  const wanted = { a_only: [true, false], b_only: [false, true], both_right: [true, true], both_wrong: [false, false] }[how];
  return Boolean(wanted) && mine.correct === wanted[0] && theirs.correct === wanted[1];
}

async function filtered(meta, run, task, params) {
  const rows = await rowsOf(meta, run, task);
  const vs = params.get("vs");
  const other = vs !== null && vs !== "" ? meta.runs.find((r) => String(r.index) === vs) : null;
  const theirs = other && other.tasks.includes(task)
    ? new Map((await rowsOf(meta, other, task)).map((r) => [`${r.id}\t${r.repeat}`, r])) : null;
  const exact = { scenario: "scenario", sample: "sample", gold: "gold", pred: "pred", prev_gold: "prev_gold", gold_kind: "gold_kind", pred_kind: "pred_kind" };
  const needle = (params.get("q") || "").trim().toLowerCase();
  const disagree = parseFloat(params.get("disagree") || "");
  const out = rows.filter((r) => {
    for (const [key, field] of Object.entries(exact)) if (params.get(key) && r[field] !== params.get(key)) return false;
    if (params.get("repeat") && String(r.repeat) !== params.get("repeat")) return false;
    if (params.get("correct") && r.correct !== (params.get("correct") === "yes")) return false;
    const failure = params.get("failure");
    if (failure && !(failure === "any" ? r.failure : r.failure === failure)) return false;
    if (!Number.isNaN(disagree) && !(r.disagree !== null && r.disagree >= disagree)) return false;
    if (params.get("cmp") && !otherMatches(r, theirs && theirs.get(`${r.id}\t${r.repeat}`), params.get("cmp"))) return false;
    return !needle || r.id.toLowerCase().includes(needle) || r.search.includes(needle);
  });
  const sort = SORTS[params.get("sort")] || SORTS.position;
  out.sort((a, b) => compareKeys(sort(a), sort(b)) * (params.get("desc") === "1" ? -1 : 1));
  return { rows: out, other, theirs };
}

function select(name, label, options, chosen, any = "any") {
  const box = el("select", { name, id: `f-${name}` }, el("option", { value: "", text: any }));
  for (const option of options) {
    const [value, text] = Array.isArray(option) ? option : [option, option];
    box.append(el("option", { value, text, selected: String(value) === chosen ? "selected" : null }));
  }
  return el("label", {}, label, " ", box);
}

function filterForm(meta, run, task, params) {
  const choices = run.choices[task];
  const freeText = meta.free_text.includes(task);
  const form = el("form", { class: "card filters", id: "filters" },
    select("scenario", "Scenario", choices.scenarios, params.get("scenario") || ""),
    select("sample", "Sample", choices.samples, params.get("sample") || ""),
    freeText ? null : select("gold", "Gold", choices.golds, params.get("gold") || ""),
    freeText ? null : select("pred", "Predicted", choices.preds, params.get("pred") || ""),
    freeText ? null : select("correct", "Correct", [["yes", "right"], ["no", "wrong"]], params.get("correct") || ""),
    run.repeats > 1 ? select("repeat", "Repeat", [...Array(run.repeats).keys()].map(String), params.get("repeat") || "") : null,
    select("failure", "Failure", [["any", "any failure"], ...meta.failure_kinds.map((k) => [k, k.replaceAll("_", " ")])], params.get("failure") || "", "any or none"),
    freeText ? el("label", {}, "Judge disagreement ≥ ", el("input", { name: "disagree", id: "f-disagree", size: 4, value: params.get("disagree") || "" })) : null,
    meta.runs.length > 1 ? select("vs", "Compare with", meta.runs.filter((r) => r.index !== run.index).map((r) => [String(r.index), r.name]), params.get("vs") || "", "–") : null,
    meta.runs.length > 1 ? select("cmp", "How", [["a_only", "right here, wrong in the other run"], ["b_only", "wrong here, right in the other run"], ["both_right", "right in both"], ["both_wrong", "wrong in both"], ["differ", "different answers"]], params.get("cmp") || "", "–") : null,
    el("label", {}, "Search ", el("input", { name: "q", id: "f-q", value: params.get("q") || "", placeholder: meta.redact ? "ids" : "ids or reply text" })),
    el("button", { type: "submit", id: "apply", text: "Filter" }),
    el("a", { href: hashOf({ run: run.index, task }), text: "clear" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = { run: run.index, task };
    for (const element of form.elements) if (element.name && element.value) chosen[element.name] = element.value;
    for (const key of ["prev_gold", "gold_kind", "pred_kind"]) if (params.get(key)) chosen[key] = params.get(key);
    window.location.hash = hashOf(chosen);
  });
  return form;
}

const PER_PAGE = 100;

async function showList(meta, run, task, params) {
  const { rows, other, theirs } = await filtered(meta, run, task, params);
  const freeText = meta.free_text.includes(task);
  const hide = meta.redact && freeText;
  const pages = Math.max(1, Math.ceil(rows.length / PER_PAGE));
  const number = Math.min(Math.max(1, parseInt(params.get("page") || "1", 10) || 1), pages);
  const keep = Object.fromEntries([...params.entries()].filter(([k]) => !["page", "id", "at"].includes(k)));
  const columns = [["position", "#"], ["sample", "Instance"], ...(run.repeats > 1 ? [["repeat", "Repeat"]] : []),
    ["gold", "Gold"], ["pred", "Predicted"], ["correct", "Correct"], ["failure", "Problems"], ["judge", "Judge"], ["disagreement", "Disagree"]];
  const head = el("tr", {}, columns.map(([key, label]) => {
    const desc = params.get("sort") === key && params.get("desc") !== "1";
    const arrow = params.get("sort") === key ? (params.get("desc") === "1" ? " ↓" : " ↑") : "";
    return el("th", {}, el("a", { href: hashOf({ ...keep, sort: key, desc: desc ? "1" : "0" }), text: label + arrow }));
  }), other ? el("th", { text: "Other run: predicted", title: other.name }) : null);
  const body = el("tbody");
  for (const r of rows.slice((number - 1) * PER_PAGE, number * PER_PAGE)) {
    const link = hashOf({ ...keep, id: r.id, at: r.repeat });
    const mine = theirs ? theirs.get(`${r.id}\t${r.repeat}`) : null;
    body.append(el("tr", { "data-id": r.id, "data-correct": r.correct === null ? "" : (r.correct ? "yes" : "no") },
      el("td", { text: r.position + 1 }),
      el("td", {}, el("a", { class: "open", href: link, text: `${r.sample} · row ${r.row}` }), " ", muted(r.scenario)),
      run.repeats > 1 ? el("td", { class: "repeat", text: r.repeat }) : null,
      el("td", {}, hide ? muted("(redacted)") : el("code", { text: r.gold.slice(0, 160) })),
      el("td", {}, hide ? muted("(redacted)") : el("code", { text: r.pred.slice(0, 160) })),
      el("td", {}, verdict(r.correct)),
      el("td", {}, r.problems.map((p) => [el("span", { class: "problem", text: p.slice(0, 80) }), " "])),
      el("td", { text: fixed(r.judge) }),
      el("td", { text: fixed(r.disagree) }),
      other ? el("td", { class: "other" }, mine && !hide ? [el("code", { text: mine.pred.slice(0, 160) }), " "] : null,
        mine && hide ? [muted("(redacted)"), " "] : null, verdict(mine ? mine.correct : null, Boolean(mine))) : null));
  }
  const nav = el("nav", { class: "pages" },
    number > 1 ? el("a", { id: "prev-page", href: hashOf({ ...keep, page: number - 1 }), text: "← previous page" }) : null,
    number < pages ? el("a", { id: "next-page", href: hashOf({ ...keep, page: number + 1 }), text: "next page →" }) : null);
  const tabs = el("p", { class: "tabs" }, run.tasks.map((t) => [el("a", { href: hashOf({ run: run.index, task: t }), class: t === task ? "current" : null, text: t.toUpperCase() }), " "]));
  return [el("h1", { text: `${task.toUpperCase()} instances of ${run.name}` }), tabs, filterForm(meta, run, task, params),
    el("p", { class: "summary" }, el("span", { id: "shown-count", text: rows.length }), ` instance(s)${pages > 1 ? `, page ${number} of ${pages}` : ""}${other ? `; compared with ${other.name}` : ""}.`),
    el("div", { class: "scroll" }, el("table", { class: "data instances", id: "instances" }, el("thead", {}, head), body)), nav];
}

function kv(rows) {
  return el("table", { class: "data kv" }, rows.map(([label, value, id]) => el("tr", {}, el("th", { text: label }), el("td", { id }, value))));
}

function card(title, ...children) {
  return el("section", { class: "card" }, el("h2", { text: title }), ...children);
}

async function everyRun(meta, run, task, id, repeat) {
  const others = meta.runs.filter((r) => r.tasks.includes(task));
  const body = el("tbody");
  for (const other of others) {
    const rows = await rowsOf(meta, other, task);
    const row = rows.find((r) => r.id === id && r.repeat === repeat) || rows.find((r) => r.id === id);
    const hide = meta.redact && meta.free_text.includes(task);
    body.append(el("tr", { class: other.index === run.index ? "current" : null },
      el("td", {}, el("a", { href: hashOf({ run: other.index, task, id, at: repeat }), text: other.name })),
      row ? [el("td", {}, hide ? muted("(redacted)") : el("code", { text: row.pred.slice(0, 160) })), el("td", {}, verdict(row.correct)),
        el("td", { text: row.problems.join("; ") }), el("td", { text: fixed(row.judge) })]
        : el("td", { colspan: 4, class: "muted", text: "not in this run" })));
  }
  return card("Every run on this instance", el("table", { class: "data", id: "side-by-side" },
    el("thead", {}, el("tr", {}, ["Run", "Predicted", "Correct", "Problems", "Judge"].map((h) => el("th", { text: h })))), body));
}

function everyRepeat(meta, task, rows, detail, keep, repeat) {
  const hide = meta.redact && meta.free_text.includes(task);
  return card("Every repeat of this instance", el("table", { class: "data", id: "repeats" },
    el("thead", {}, el("tr", {}, ["Repeat", "Predicted", "Correct", "Scores", "Problems", "Reply"].map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((r) => {
      const item = detail.items[`${r.id}\t${r.repeat}`];
      const reply = item.request ? (item.request.text || item.request.error || "") : null;
      return el("tr", { "data-repeat": r.repeat, class: r.repeat === repeat ? "current" : null },
        el("td", {}, el("a", { href: hashOf({ ...keep, id: r.id, at: r.repeat }), text: r.repeat })),
        el("td", { class: "predicted" }, hide ? muted("(redacted)") : el("code", { text: r.pred.slice(0, 160) })),
        el("td", {}, verdict(r.correct)), el("td", { class: "scores" }, scoreSpans(item.scores)),
        el("td", { text: r.problems.join("; ") }),
        el("td", {}, meta.redact ? muted("(redacted)") : reply === null ? muted("no request record") : el("pre", { class: "text reply", text: reply })));
    }))));
}

async function transcript(detail, row) {
  const found = detail.transcripts ? detail.transcripts[row.id] : null;
  const problem = detail.problem || (found ? found.problem : "the instance was not rebuilt");
  if (problem) return [card("Transcript the model saw", el("p", { class: "notice", id: "rebuild-problem", text: problem }))];
  const conversations = await load(detail.conversations);
  const sample = conversations[row.sample];
  const sides = Object.fromEntries(sample.participants.map((name, i) => [name, "abcdefgh"[i % 8]]));
  sides[sample.therapist] = "therapist";
  const shown = new Set(found.shown);
  const turns = sample.rows.filter(([index]) => index <= row.row).map(([index, speaker, text]) => {
    const target = index === found.target;
    const classes = ["turn", `side-${sides[speaker] || "other"}`, target ? "target" : "", shown.has(index) ? "" : "hidden-row"];
    return el("li", { class: classes.join(" ").trim(), id: `row-${index}` },
      el("span", { class: "who" }, `[${index}] ${speaker}`, target ? [" ", el("span", { class: "tag", text: "target row" })] : null,
        shown.has(index) ? null : [" ", muted("(not shown to the model)")]),
      el("span", { class: "said", text }));
  });
  const position = found.batch.indexOf(row.id);
  const out = [card("Transcript the model saw", found.notes.map((n) => el("p", { class: "notice", text: n })),
    el("ol", { class: "conversation", id: "conversation" }, turns),
    found.batch.length > 1 ? el("p", { class: "note", text: `Asked together with ${found.batch.length - 1} other instance(s); this one is c${position >= 0 ? position + 1 : "?"}.` }) : null)];
  const messages = await load(detail.messages);
  const request = messages.requests[found.request];
  out.push(card(found.exact ? "Messages sent" : "Messages (rebuilt)",
    el("p", { class: found.exact ? "note" : "notice", id: "data-origin", text: found.origin }),
    request.messages.map(([role, index], i) => el("details", { open: role !== "system" ? "open" : null },
      el("summary", { text: role }), el("pre", { class: "text", id: `msg-${i + 1}`, text: messages.strings[index] }))),
    el("details", {}, el("summary", { text: "answer schema" }), el("pre", { class: "text", id: "schema", text: messages.strings[request.schema] }))));
  return out;
}

async function showInstance(meta, run, task, id, params) {
  const repeat = parseInt(params.get("at") || params.get("repeat") || "0", 10) || 0;
  const { rows } = await filtered(meta, run, task, params);
  const all = await rowsOf(meta, run, task);
  const row = all.find((r) => r.id === id && r.repeat === repeat);
  if (!row) return [el("h1", { text: "Not found" }), el("p", { id: "message", text: `${run.name} has no instance ${id} in ${task.toUpperCase()}.` })];
  const detail = await load(`detail-${run.index}-${task}`);
  const item = detail.items[`${id}\t${repeat}`];
  const keep = Object.fromEntries([...params.entries()].filter(([k]) => !["id", "at", "page"].includes(k)));
  const at = rows.findIndex((r) => r.id === id && r.repeat === repeat);
  const step = (r, label, domId) => (r ? el("a", { id: domId, href: hashOf({ ...keep, id: r.id, at: r.repeat }), text: label }) : null);
  const hide = meta.redact && meta.free_text.includes(task);
  const out = [
    el("nav", { class: "steps" }, at > 0 ? step(rows[at - 1], "← previous", "prev") : null,
      el("a", { id: "back", href: hashOf(keep), text: "back to the list" }), at >= 0 ? step(rows[at + 1], "next →", "next") : null),
    el("h1", { id: "instance-id", text: id }),
    el("p", { class: "muted" }, `${run.name} · ${task.toUpperCase()} · ${row.scenario} · sample ${row.sample} · row ${row.row}`,
      run.repeats > 1 ? [" · ", el("span", { id: "shown-repeat", text: `repeat ${repeat}` }), ` of ${run.repeats}`] : null),
    card("Answer", kv([
      ["Gold", hide ? muted("(redacted)") : el("pre", { text: json(item.gold) }), "gold"],
      ["Parsed answer", hide ? muted("(redacted)") : el("pre", { text: json(item.prediction) }), "prediction"],
      ["Valid", row.valid ? "yes" : "no"],
      ["Correct (top 1)", verdict(row.correct), "verdict"],
      ["Scores", scoreSpans(item.scores), "scores"],
      ["Problems", row.problems.length ? row.problems.map((p) => el("div", { class: "problem", text: p })) : "none", "problems"],
      ["Meta", scoreSpans(item.meta)],
    ])),
  ];
  if (run.repeats > 1) out.push(everyRepeat(meta, task, all.filter((r) => r.id === id), detail, keep, repeat));
  if (meta.runs.length > 1) out.push(await everyRun(meta, run, task, id, repeat));
  if (item.judgments.length) {
    out.push(card("Judges and BERTScore", el("table", { class: "data", id: "judgments" },
      el("thead", {}, el("tr", {}, ["Judge", "Valid", "Scores", "Problems", "Rationale"].map((h) => el("th", { text: h })))),
      el("tbody", {}, item.judgments.map(([judge, valid, scores, problems, raw]) => el("tr", {},
        el("td", { text: judge }), el("td", { text: valid ? "yes" : "no" }), el("td", {}, scoreSpans(scores)),
        el("td", { text: problems.join("; ") }),
        el("td", {}, meta.redact ? muted("(redacted)") : el("details", {}, el("summary", { text: "show" }), el("pre", { class: "text", text: json(raw) })))))))));
  }
  const request = item.request;
  if (!meta.redact) {
    out.push(...await transcript(detail, row));
    out.push(card("Reply", request ? [request.error ? el("p", { class: "bad", text: `Request failed: ${request.error}` }) : null,
      el("pre", { class: "text", id: "reply", text: request.text || "" }),
      request.reasoning ? el("details", {}, el("summary", { text: "reasoning" }), el("pre", { class: "text", id: "reasoning", text: request.reasoning })) : null]
      : el("p", { class: "muted", id: "reply", text: "No request record (a baseline answers without a request, or the run has not recorded it yet)." })));
  }
  if (request) {
    out.push(card("Request record", el("table", { class: "data kv", id: "request" },
      el("tr", {}, el("th", { text: "request key" }), el("td", {}, el("code", { text: request.key }))),
      el("tr", {}, el("th", { text: "finish reason" }), el("td", { text: request.finish || "" })),
      Object.entries(request.facts).map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { id: `fact-${k}`, text: v }))))));
  }
  return out;
}

async function findTask(meta, run, id) {
  for (const task of run.tasks) {
    if ((await rowsOf(meta, run, task)).some((r) => r.id === id)) return task;
  }
  return null;
}

async function route() {
  const app = document.getElementById("app");
  try {
    const meta = await load("runs");
    const params = new URLSearchParams(window.location.hash.slice(1));
    const run = meta.runs.find((r) => String(r.index) === (params.get("run") || String(meta.runs[0].index)));
    if (!run) throw new Error(`no run ${params.get("run")} in this bundle`);
    const id = params.get("id");
    let task = params.get("task") || (id ? await findTask(meta, run, id) : null) || run.tasks[0];
    if (!run.tasks.includes(task)) throw new Error(`${run.name} has no task ${task}`);
    const parts = id ? await showInstance(meta, run, task, id, params) : await showList(meta, run, task, params);
    document.title = `${id || `${task.toUpperCase()} instances of ${run.name}`} · rescue-bench view`;
    app.replaceChildren(...parts);
    window.scrollTo(0, 0);
  } catch (error) {
    app.replaceChildren(el("h1", { text: "Cannot show this" }), el("p", { id: "message", class: "bad", text: String(error.message || error) }));
  }
  app.dataset.ready = String(Number(app.dataset.ready || "0") + 1);
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", route);
