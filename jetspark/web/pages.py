"""The HTML of the two pages, with their style and script inline (nothing is loaded from elsewhere).

Pages are rendered once with the figures of the moment; the script then asks the JSON API every
second and writes the new figures into the elements marked `data-field` (with `textContent`, never
as markup). Every value put into the markup here is escaped.
"""

from __future__ import annotations

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
"""

SCRIPT = """
const fmt = (v) => (v === null || v === undefined) ? '' :
  (typeof v === 'number' ? v.toLocaleString('en-US', {maximumFractionDigits: 1}) : String(v));
function fill(root, data) {
  for (const el of root.querySelectorAll('[data-field]')) {
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
    if (row) fill(row, v);
    const counts = document.querySelector('text[data-counts="' + CSS.escape(v.name) + '"]');
    if (counts) counts.textContent = v.received === null ? '' :
      'in ' + fmt(v.received) + ' \\u00b7 out ' + fmt(v.emitted);
  }
  for (const [action, allowed] of Object.entries(job.actions)) {
    const button = document.getElementById(action);
    if (button) button.disabled = !allowed;
  }
  document.getElementById('error').textContent = job.error || '';
  const snaps = document.querySelector('#snapshot-list tbody');
  if (snaps) {
    snaps.replaceChildren();
    for (const s of job.snapshot_list) {
      const tr = document.createElement('tr');
      for (const field of ['id', 'created_text', 'duration_ms', 'entries', 'bytes', 'files']) {
        const td = document.createElement('td');
        td.textContent = fmt(s[field]);
        if (field !== 'created_text') td.className = 'num';
        tr.appendChild(td);
      }
      snaps.appendChild(tr);
    }
  }
  const links = document.getElementById('spark-links');
  if (links && links.children.length !== job.spark_links.length) {
    links.replaceChildren();
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


def job_page(job: dict[str, Any], svg: str, token: str) -> str:
    """One job: its figures, the DAG, per-vertex metrics, Spark stages and links, and the buttons."""
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
        f"<tr><th>runner</th><td>{escape(job['runner'])} ({escape(str(job['members']))} members)</td></tr>"
        f"<tr><th>started</th><td>{escape(job['submitted_text'])}</td></tr>"
        f'<tr><th>duration (s)</th><td data-field="duration">{job["duration"]}</td></tr>'
        "</table>"
    )
    header = "".join(
        f"<th>{h}</th>"
        for h in ("vertex", "lp", "received", "emitted", "queued", "in/s", "out/s", "watermark")
    )
    rows = "".join(
        f'<tr data-vertex="{escape(v["name"], quote=True)}"><td>{escape(v["name"])}</td>'
        + _cell("parallelism", v["parallelism"], num=True)
        + _cell("received", v["received"], num=True)
        + _cell("emitted", v["emitted"], num=True)
        + _cell("queued", v["queued"], num=True)
        + _cell("rate_in", v["rate_in"], num=True)
        + _cell("rate_out", v["rate_out"], num=True)
        + _cell("watermark", v["watermark"], num=True)
        + "</tr>"
        for v in job["vertices"]
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
            "(about every second); exact when it ends. A job in epochs shows its committed epochs'.</p>"
            + spark_ui
            + f"<ul id=spark-links>{links}</ul>"
            + "<table><thead><tr><th>stage</th><th>name</th><th>tasks done</th><th>active</th>"
            "<th>failed</th></tr></thead><tbody id=stages></tbody></table>"
        )
    body = (
        f'<p><a href="/">all jobs</a></p><div id=job><h1>job {escape(job["name"])}</h1>{facts}'
        f'<div class="actions">{buttons}</div><p id=error class="error">{escape(job["error"] or "")}</p>'
        f"<h2>DAG</h2>{svg}<h2>vertices</h2><table id=vertices><thead><tr>{header}</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        + (
            f"<h2>snapshots</h2><table>{snapshots}</table>{_snapshot_table(job['snapshot_list'])}"
            if job["has_snapshots"]
            else ""
        )
        + spark
        + "</div>"
    )
    return _page(
        f"jetspark job {job['name']}", body, f"refreshJob({key}); every(1000, () => refreshJob({key}));"
    )
