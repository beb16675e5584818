"""The HTML of the two pages, with their style and script inline (nothing is loaded from elsewhere).

Pages are rendered once with the figures of the moment; the script then asks the JSON API every
second and writes the new figures into the elements marked `data-field` (with `textContent`, never
as markup). Every value put into the markup here is escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .6em; } h2 { font-size: 1.1em; margin: 1.4em 0 .5em; }
table { border-collapse: collapse; } th, td { padding: .3em .8em; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.state { font-weight: 600; } .state-running { color: #0a6; } .state-failed { color: #c00; }
.state-cancelled { color: #a60; } .state-suspended { color: #66a; } .state-completed { color: #06a; }
.actions form { display: inline; } .actions button { margin-right: .5em; padding: .3em 1em; }
svg.dag rect { fill: #eef4fb; stroke: #4a78a8; } svg.dag text { font: 12px system-ui, sans-serif; }
svg.dag text.name { font-weight: 600; } svg.dag text.lp, svg.dag text.counts { fill: #555; }
svg.dag .edge path { fill: none; stroke: #555; stroke-width: 1.3; }
svg.dag .edge.distributed path { stroke-width: 3.2; stroke: #345; }
svg.dag .edge text { font-size: 11px; fill: #333; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.error { color: #c00; white-space: pre-wrap; } .muted { color: #777; } a { color: #06a; }
.scroll { max-width: 100%; overflow-x: auto; }
svg.dag g.vertex[data-backpressure="ok"] rect { fill: #e7f5ea; stroke: #3a8a4f; }
svg.dag g.vertex[data-backpressure="low"] rect { fill: #fff3d1; stroke: #c79a1e; }
svg.dag g.vertex[data-backpressure="high"] rect { fill: #fbdcdc; stroke: #c0392b; stroke-width: 2; }
td[data-backpressure="low"] { background: #fff3d1; } td[data-backpressure="high"] { background: #fbdcdc; }
.charts { display: flex; flex-wrap: wrap; gap: .6em; } .charts img { border: 1px solid #ddd; }
#epoch-list tr[data-outcome="aborted"] td { background: #fbdcdc; }
#epoch-list tr[data-outcome="running"] td { background: #e7f5ea; }
#epoch-list td.cause { max-width: 40em; white-space: normal; overflow-wrap: anywhere; font-size: 12px; }
.exception { border-left: 3px solid #c00; padding: .2em .8em; margin: .5em 0; }
.exception pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; background: #f7f7f7;
  padding: .5em; margin: .3em 0; }
"""

SCRIPT = """
const fmt = (v) => (v === null || v === undefined) ? '' :
  (typeof v === 'number' ? v.toLocaleString('en-US', {maximumFractionDigits: 1}) : String(v));
// the snapshot and epoch tables' cells are refilled row by row (`refill`): a job's own field of
// the same name (its `id`) must not overwrite them
const REFILLED = '#snapshot-list, #epoch-list';
function fill(root, data) {
  for (const el of root.querySelectorAll('[data-field]')) {
    if (el.closest(REFILLED)) continue;
    const value = el.dataset.field.split('.').reduce((o, k) => (o == null ? o : o[k]), data);
    el.textContent = fmt(value);
    if (el.classList.contains('state')) el.className = 'state state-' + value;
  }
}
async function refreshJobs() {
  const rows = await (await fetch('/api/jobs', {cache: 'no-store'})).json();
  const body = document.getElementById('jobs');
  body.replaceChildren();
  for (const job of rows) {
    const tr = document.getElementById('job-row').content.firstElementChild.cloneNode(true);
    tr.dataset.key = job.key;
    fill(tr, job);
    const link = tr.querySelector('a');
    link.href = '/jobs/' + job.key;
    link.textContent = job.name;
    body.appendChild(tr);
  }
  document.getElementById('count').textContent = rows.length;
}
async function refreshJob(key) {
  const job = await (await fetch('/api/jobs/' + key, {cache: 'no-store'})).json();
  fill(document.getElementById('job'), job);
  for (const v of job.vertices) {
    const row = document.querySelector('tr[data-vertex="' + CSS.escape(v.name) + '"]');
    if (row) {
      fill(row, v);
      const bp = row.querySelector('[data-field="backpressure_pct"]');
      if (bp) bp.dataset.backpressure = v.backpressure_level;
      const mark = row.querySelector('[data-field="watermark_text"]');
      if (mark) mark.title = v.watermark === null ? '' : 'watermark ' + v.watermark;
    }
    const box = document.querySelector('svg.dag g.vertex[data-vertex="' + CSS.escape(v.name) + '"]');
    if (box) box.dataset.backpressure = v.backpressure_level;
    const counts = document.querySelector('text[data-counts="' + CSS.escape(v.name) + '"]');
    if (counts) counts.textContent = v.received === null ? '' :
      'in ' + fmt(v.received) + ' \u00b7 out ' + fmt(v.emitted);
  }
  for (const [action, allowed] of Object.entries(job.actions)) {
    const button = document.getElementById(action);
    if (button) button.disabled = !allowed;
  }
  document.getElementById('error').textContent = job.error || '';
  refill('#snapshot-list tbody', job.snapshot_list,
    ['id', 'created_text', 'duration_ms', 'entries', 'bytes', 'files']);
  if (job.epochs) refill('#epoch-list tbody', job.epochs.list, EPOCH_FIELDS, 'outcome');
  showExceptions(job.exceptions);
  const links = document.getElementById('spark-links');
  const newest = job.spark_links.length ? job.spark_links[job.spark_links.length - 1].url : '';
  if (links && (links.children.length !== job.spark_links.length || links.dataset.newest !== newest)) {
    links.replaceChildren();
    links.dataset.newest = newest;
    for (const link of job.spark_links) {
      const a = document.createElement('a');
      a.href = link.url;
      a.textContent = link.label;
      const li = document.createElement('li');
      li.appendChild(a);
      links.appendChild(li);
    }
  }
  const stages = document.getElementById('stages');
  if (stages) {
    stages.replaceChildren();
    for (const s of job.spark_stages) {
      const tr = document.createElement('tr');
      for (const text of [s.stage_id, s.name, s.completed + '/' + s.tasks, s.active, s.failed]) {
        const td = document.createElement('td');
        td.textContent = String(text);
        tr.appendChild(td);
      }
      stages.appendChild(tr);
    }
  }
}
const TEXT_FIELDS = ['created_text', 'time_text', 'outcome', 'cause'];
function refill(selector, rows, fields, mark) {
  const body = document.querySelector(selector);
  if (!body) return;
  body.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement('tr');
    if (mark) tr.dataset[mark] = r[mark] ?? '';
    for (const field of fields) {
      const td = document.createElement('td');
      td.textContent = fmt(r[field]);
      td.dataset.field = field;
      td.className = TEXT_FIELDS.includes(field) ? field : 'num';
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}
function showExceptions(list) {
  const box = document.getElementById('exceptions');
  const seen = JSON.stringify(list.map((e) => [e.time, e.what, e.message]));
  if (!box || box.dataset.seen === seen) return;  // unchanged: keep open tracebacks open
  box.dataset.seen = seen;
  box.replaceChildren();
  document.getElementById('exception-count').textContent = list.length;
  for (const e of list) {
    const entry = document.createElement('div');
    entry.className = 'exception';
    const line = document.createElement('p');
    const what = document.createElement('b');
    what.textContent = e.what;
    line.append(e.time_text ? e.time_text + ' ' : '', what, ': ' + e.message);
    entry.appendChild(line);
    if (e.traceback) {
      const details = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = 'traceback';
      const pre = document.createElement('pre');
      pre.textContent = e.traceback;
      details.append(summary, pre);
      entry.appendChild(details);
    }
    box.appendChild(entry);
  }
}
function refreshCharts() {
  for (const img of document.querySelectorAll('img[data-chart]')) {
    img.src = img.dataset.chart + '?t=' + Date.now();
  }
  return Promise.resolve();
}
function every(ms, task) {
  const run = () => task().catch(() => {}).finally(() => setTimeout(run, ms));
  setTimeout(run, ms);
}
"""


def _page(title: str, body: str, script: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{body}"
        f"<script>{SCRIPT}{script}</script></body></html>"
    )


def _cell(field: str, value: Any, num: bool = False, extra: str = "") -> str:
    text = "" if value is None else (f"{value:,}" if isinstance(value, int) else str(value))
    css = ' class="num"' if num else extra
    return f'<td{css} data-field="{field}">{escape(text)}</td>'


def jobs_page(rows: list[dict[str, Any]]) -> str:
    """The jobs list: id, name, state, runner, start time, duration; refreshed every second."""
    head = "".join(
        f"<th>{h}</th>" for h in ("job", "id", "state", "runner", "members", "started", "duration (s)")
    )
    body_rows = "".join(_job_row(row) for row in rows)
    template = _job_row(
        {"key": 0, "name": "", "id": "", "state": "", "runner": "", "members": None}
        | {"submitted_text": "", "duration": None}
    )
    body = (
        f"<h1>jetspark jobs (<span id=count>{len(rows)}</span>)</h1>"
        f"<table><thead><tr>{head}</tr></thead><tbody id=jobs>{body_rows}</tbody></table>"
        f"<template id=job-row>{template}</template>"
        '<p class="muted">Refreshes every second.</p>'
    )
    return _page("jetspark jobs", body, "every(1000, refreshJobs);")


def _job_row(row: dict[str, Any]) -> str:
    state = escape(str(row["state"]))
    return (
        f'<tr data-key="{int(row["key"])}"><td><a href="/jobs/{int(row["key"])}">{escape(row["name"])}</a></td>'
        + _cell("id", row["id"])
        + f'<td class="state state-{state}" data-field="state">{state}</td>'
        + _cell("runner", row["runner"])
        + _cell("members", row["members"], num=True)
        + _cell("submitted_text", row["submitted_text"])
        + _cell("duration", row["duration"], num=True)
        + "</tr>"
    )


SNAPSHOT_COLUMNS = (
    ("id", "snapshot"),
    ("created_text", "taken"),
    ("duration_ms", "duration (ms)"),
    ("entries", "entries"),
    ("bytes", "bytes"),
    ("files", "files"),
)


def _snapshot_table(snapshots: list[dict[str, Any]]) -> str:
    """The last snapshots (id, time, duration, entries, bytes, files); the script refills it."""
    head = "".join(f"<th>{title}</th>" for _, title in SNAPSHOT_COLUMNS)
    rows = "".join(
        "<tr>"
        + "".join(_cell(field, s[field], num=field != "created_text") for field, _ in SNAPSHOT_COLUMNS)
        + "</tr>"
        for s in snapshots
    )
    return f"<table id=snapshot-list><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


VERTEX_COLUMNS = (
    ("parallelism", "lp"),
    ("received", "received"),
    ("emitted", "emitted"),
    ("queued", "queued"),
    ("rate_in", "in/s"),
    ("rate_out", "out/s"),
    ("backpressure_pct", "back-pressured %"),
    ("upstream_watermark_text", "upstream watermark"),
    ("watermark_text", "watermark (UTC)"),
    ("watermark_lag", "lag (s)"),
    ("output_watermark_text", "output watermark"),
    ("custom_text", "processor metrics"),
)
EPOCH_COLUMNS = (
    ("epoch", "epoch"),
    ("outcome", "outcome"),
    ("time_text", "ended"),
    ("duration_s", "duration (s)"),
    ("span_s", "sources ran (s)"),
    ("sources_idle", "sources idle"),
    ("items_in", "items in"),
    ("items_out", "items out"),
    ("state_bytes", "state bytes"),
    ("state_entries", "state entries"),
    ("sink_bytes", "sink bytes"),
    ("commit_ms", "commit (ms)"),
    ("cause", "cause"),
)
#: Epoch columns of a job whose handle keeps no per-epoch figures (from its snapshots).
SNAPSHOT_EPOCH_COLUMNS = (
    ("epoch", "epoch"),
    ("time_text", "committed"),
    ("duration_s", "duration (s)"),
    ("bytes", "bytes"),
    ("files", "files"),
)
TEXT_FIELDS = ("created_text", "time_text", "outcome", "cause")


def _vertex_row(v: dict[str, Any]) -> str:
    cells = []
    for field, _ in VERTEX_COLUMNS:
        cell = _cell(field, v[field], num=field != "custom_text")
        if field == "backpressure_pct":
            cell = cell.replace(
                "<td", f'<td data-backpressure="{escape(v["backpressure_level"], quote=True)}"', 1
            )
        cells.append(cell)
    return (
        f'<tr data-vertex="{escape(v["name"], quote=True)}"><td>{escape(v["name"])}</td>{"".join(cells)}</tr>'
    )


def _vertex_table(vertices: list[dict[str, Any]]) -> str:
    """Per vertex: parallelism, counts, rates, back-pressure, watermark and lag, own counters."""
    header = "".join(f"<th>{title}</th>" for title in ("vertex", *(t for _, t in VERTEX_COLUMNS)))
    rows = "".join(_vertex_row(v) for v in vertices)
    return (
        f'<div class="scroll"><table id=vertices><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>'
        '<p class="muted">Back-pressured: the share of the last second its processors held items that a full '
        "downstream queue refused (ok below 10 %, high from 50 %; the DAG is coloured so). Watermarks: "
        "upstream, the lowest its producers sent; the vertex's own (what its processors took), with "
        "its lag behind the clock; output, what they sent on. An upstream watermark ahead of the "
        "vertex's own points at a processor holding watermarks back. Each is shown as a time when it "
        "reads as milliseconds since 1970.</p>"
    )


def _charts(job: dict[str, Any]) -> str:
    """Items per second in and out of each vertex over the last minutes, and the durations of
    the last snapshots or epochs: images the script asks for again every few seconds."""
    key = int(job["key"])
    images = [
        f'<img data-chart="/jobs/{key}/charts/throughput/{int(v["index"])}.svg" '
        f'src="/jobs/{key}/charts/throughput/{int(v["index"])}.svg" width=300 height=110 '
        f'alt="items per second in and out of {escape(v["name"], quote=True)}">'
        for v in job["vertices"]
    ]
    if job["has_snapshots"]:
        what = "epoch" if job["epochs"] is not None else "snapshot"
        images.append(
            f'<img id=durations-chart data-chart="/jobs/{key}/charts/durations.svg" '
            f'src="/jobs/{key}/charts/durations.svg" width=300 height=110 alt="{what} durations">'
        )
    minutes = f"{job['chart_span_s'] / 60:g}"
    return f"<h2>over the last {minutes} minutes</h2><div class=charts id=charts>{''.join(images)}</div>"


def _exceptions(entries: list[dict[str, Any]]) -> str:
    """Failures the job went on after, aborted epochs and the failure it ended with, newest first."""
    items = []
    for e in entries:
        trace = (
            f"<details><summary>traceback</summary><pre>{escape(e['traceback'])}</pre></details>"
            if e["traceback"]
            else ""
        )
        when = f"{escape(e['time_text'])} " if e["time_text"] else ""
        items.append(
            f'<div class="exception"><p>{when}<b>{escape(e["what"])}</b>: {escape(e["message"])}</p>{trace}</div>'
        )
    return (
        f"<h2>exceptions (<span id=exception-count>{len(entries)}</span>)</h2>"
        f"<div id=exceptions>{''.join(items)}</div>"
    )


def _epochs(epochs: dict[str, Any]) -> str:
    """A job in epochs: counts, the running epoch, the last abort's cause, the last epoch's
    duration, and the last epochs with their figures (the script refills the table)."""
    facts = "".join(
        f'<tr><th>{title}</th><td data-field="epochs.{field}">{escape("" if epochs[field] is None else str(epochs[field]))}</td></tr>'
        for field, title in (
            ("committed", "epochs committed"),
            ("aborted", "epochs aborted"),
            ("running", "running"),
            ("last_duration_s", "last epoch (s)"),
            ("last_abort", "last abort"),
        )
    )
    columns = epoch_columns(epochs["list"])
    head = "".join(f"<th>{title}</th>" for _, title in columns)
    rows = "".join(
        f'<tr data-outcome="{escape(str(e.get("outcome") or ""), quote=True)}">'
        + "".join(
            _cell(field, e.get(field), num=field not in TEXT_FIELDS, extra=f' class="{field}"')
            for field, _ in columns
        )
        + "</tr>"
        for e in epochs["list"]
    )
    fields = json.dumps([field for field, _ in columns])
    return (
        f"<h2>epochs</h2><table id=epoch-facts>{facts}</table>"
        f'<div class="scroll"><table id=epoch-list><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'
        f"<script>const EPOCH_FIELDS = {fields};</script>"
        '<p class="muted">The last epochs, newest first. Items in: emitted by the sources (once each); items out: '
        "received by the sinks; state: the snapshot the epoch ended with (bytes, entries); sink bytes: "
        "what file sinks wrote; commit: the driver's commit of the snapshot. The running epoch shows "
        "what its tasks last reported (about every second); an aborted epoch's work is thrown away "
        "and it runs again.</p>"
    )


def epoch_columns(listed: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The per-epoch figures' columns, or where a job keeps none its snapshots' columns."""
    if listed and "outcome" not in listed[0]:
        return SNAPSHOT_EPOCH_COLUMNS
    return EPOCH_COLUMNS


def job_page(job: dict[str, Any], svg: str, token: str) -> str:
    """One job: its figures, the DAG, per-vertex metrics, charts, snapshots or epochs, exceptions,
    Spark stages and links, and the buttons."""
    key = int(job["key"])
    state = escape(job["state"])
    buttons = "".join(
        f'<form method=post action="/jobs/{key}/{action}"><input type=hidden name=token '
        f'value="{escape(token, quote=True)}"><button id={action} type=submit'
        f"{'' if job['actions'][action] else ' disabled'}>{action}</button></form>"
        for action in ("cancel", "suspend", "resume")
    )
    facts = (
        "<table>"
        f"<tr><th>name</th><td>{escape(job['name'])}</td></tr>"
        f"<tr><th>id</th><td>{escape(job['id'])}</td></tr>"
        f'<tr><th>state</th><td class="state state-{state}" data-field="state">{state}</td></tr>'
        f"<tr><th>runner</th><td>{escape(job['runner'])} ({escape(str(job['members']))} "
        f"member{'' if job['members'] == 1 else 's'})</td></tr>"
        f"<tr><th>started</th><td>{escape(job['submitted_text'])}</td></tr>"
        f'<tr><th>duration (s)</th><td data-field="duration">{job["duration"]}</td></tr>'
        "</table>"
    )
    snapshots = "".join(
        f'<tr><th>{escape(name.replace("_", " "))}</th><td data-field="snapshots.{escape(name)}">'
        f"{escape(str(value))}</td></tr>"
        for name, value in job["snapshots"].items()
    )
    spark = ""
    if job["runner"].startswith("spark"):
        links = "".join(
            f'<li><a href="{escape(link["url"], quote=True)}">{escape(link["label"])}</a></li>'
            for link in job["spark_links"]
        )
        if job["spark_ui"] is None:
            spark_ui = '<p class="muted">This Spark session has no web UI (spark.ui.enabled is false).</p>'
        else:  # the script adds each Spark job's link as Spark starts it
            spark_ui = f'<p>Spark UI: <a href="{escape(job["spark_ui"], quote=True)}">{escape(job["spark_ui"])}</a></p>'
        spark = (
            "<h2>Spark</h2>"
            '<p class="muted">While a Spark job runs, the per-vertex counts are what its tasks last reported '
            "(about every second); exact when it ends. A job in epochs adds the running epoch's reported counts "
            "to its committed epochs'.</p>"
            + spark_ui
            + f"<ul id=spark-links>{links}</ul>"
            + '<p class="muted">The newest Spark jobs; earlier ones not listed: '
            + f'<span data-field="spark_links_left_out">{int(job["spark_links_left_out"])}</span></p>'
            + '<div class="scroll"><table><thead><tr><th>stage</th><th>name</th><th>tasks done</th><th>active</th>'
            "<th>failed</th></tr></thead><tbody id=stages></tbody></table></div>"
        )
    if job["epochs"] is not None:
        durable = _epochs(job["epochs"])  # each epoch ends in one snapshot: the epochs say it all
    elif job["has_snapshots"]:
        durable = f"<h2>snapshots</h2><table>{snapshots}</table>{_snapshot_table(job['snapshot_list'])}"
    else:
        durable = ""
    body = (
        f'<p><a href="/">all jobs</a></p><div id=job><h1>job {escape(job["name"])}</h1>{facts}'
        f'<div class="actions">{buttons}</div><p id=error class="error">{escape(job["error"] or "")}</p>'
        f'<h2>DAG</h2><div class="scroll" id=dag>{svg}</div><h2>vertices</h2>{_vertex_table(job["vertices"])}'
        + _charts(job)
        + durable
        + _exceptions(job["exceptions"])
        + spark
        + "</div>"
    )
    return _page(
        f"jetspark job {job['name']}",
        body,
        f"refreshJob({key}); every(1000, () => refreshJob({key})); every(5000, refreshCharts);",
    )
