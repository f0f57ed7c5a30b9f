// webcoop consoles: what both pages share. No framework and no build step: the binary serves
// this file as it is. Everything a crawled site or a file name can put on the page goes
// through textContent, never innerHTML.
"use strict";

const wc = (() => {
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c ?? ""));
    return e;
  };

  async function api(path, body) {
    const opts = { credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-Webcoop-Action"] = "1";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const text = await r.text();
    let data;
    try { data = JSON.parse(text); } catch (_) { data = { error: text.trim() }; }
    if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
    return data;
  }

  // The live stream: `onData` gets each event's JSON; the state badge says whether it flows.
  function stream(path, onData, badge) {
    let es;
    const open = () => {
      es = new EventSource(path);
      es.onmessage = (m) => {
        try { onData(JSON.parse(m.data)); } catch (e) { console.error(e); }
      };
      es.onerror = () => {
        if (badge) { badge.textContent = "connection lost"; badge.className = "state lost"; }
        if (es.readyState === EventSource.CLOSED) setTimeout(open, 2000);
      };
    };
    open();
  }

  const fmt = {
    num: (n) => (n === null || n === undefined || Number.isNaN(n)) ? "–" :
      Number(n).toLocaleString("en-US", { maximumFractionDigits: Math.abs(n) < 10 ? 2 : 0 }),
    bytes: (n) => {
      if (n === null || n === undefined) return "–";
      const u = ["B", "KiB", "MiB", "GiB", "TiB"];
      let v = Number(n), i = 0;
      while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return (i === 0 ? v : v.toFixed(1)) + " " + u[i];
    },
    secs: (s) => {
      if (s === null || s === undefined) return "–";
      if (s < 1) return Math.round(s * 1000) + " ms";
      if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + " s";
      if (s < 7200) return Math.round(s / 60) + " min";
      if (s < 172800) return (s / 3600).toFixed(1) + " h";
      return (s / 86400).toFixed(1) + " d";
    },
    time: (ms) => ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "–",
    pct: (f) => (f === null || f === undefined) ? "–" : (100 * f).toFixed(1) + " %",
  };

  // A line chart of `series` ([{name, points: [[t_ms, v], ...]}]) drawn as SVG into `box`.
  function chart(box, series, opts) {
    // Drawn at the box's own width, so text is never stretched.
    const W = Math.max(280, Math.round(box.clientWidth || 600)), H = 180, L = 56, B = 18, T = 8, R = 8;
    const all = series.flatMap((s) => s.points);
    const svgNS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const mk = (tag, a) => {
      const e = document.createElementNS(svgNS, tag);
      for (const [k, v] of Object.entries(a)) e.setAttribute(k, v);
      svg.append(e);
      return e;
    };
    const t0 = all.length ? Math.min(...all.map((p) => p[0])) : 0;
    const t1 = all.length ? Math.max(...all.map((p) => p[0])) : 1;
    const top = Math.max(opts?.min ?? 0, ...all.map((p) => p[1])) || 1;
    const x = (t) => L + (W - L - R) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    mk("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B });
    mk("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B });
    const label = opts?.format || fmt.num;
    mk("text", { x: 2, y: T + 8 }).textContent = label(top);
    mk("text", { x: 2, y: H - B }).textContent = label(0);
    if (all.length) {
      mk("text", { x: L, y: H - 4 }).textContent = new Date(t0).toISOString().slice(11, 19);
      mk("text", { x: W - R, y: H - 4, "text-anchor": "end" }).textContent = new Date(t1).toISOString().slice(11, 19);
    }
    const colours = ["#1f6feb", "#e8710a", "#2e7d32", "#9334e6"];
    series.forEach((s, i) => {
      if (!s.points.length) return;
      const d = s.points.map((p, j) => (j ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
      mk("path", { d, fill: "none", stroke: colours[i % 4], "stroke-width": 1.6 });
      const [lt, lv] = s.points[s.points.length - 1];
      mk("circle", { cx: x(lt).toFixed(1), cy: y(lv).toFixed(1), r: 2.5, fill: colours[i % 4] });
    });
    box.replaceChildren(svg);
    const legend = el("div", { class: "legend" });
    series.forEach((s, i) => {
      const last = s.points.length ? s.points[s.points.length - 1][1] : null;
      legend.append(el("span", {}, el("span", { class: "sw s" + (i % 4) }), s.name + ": " + label(last)));
    });
    box.append(legend);
  }

  // Per-second rates of a cumulative counter over samples [{t, ...}].
  function rate(samples, key) {
    const out = [];
    for (let i = 1; i < samples.length; i++) {
      const dt = (samples[i].t - samples[i - 1].t) / 1000;
      if (dt > 0) out.push([samples[i].t, Math.max(0, (samples[i][key] - samples[i - 1][key]) / dt)]);
    }
    return out;
  }

  // A sortable, filterable table. columns: [{key, label, num, fmt, link}]; state keeps the
  // sort and the filter across refreshes. With state.reload the server sorts, filters and
  // pages (state.total rows in all, from state.offset): a click asks it again.
  function table(box, columns, rows, state, rowClass) {
    state.sort = state.sort || columns[0].key;
    const server = typeof state.reload === "function";
    const f = (state.filter || "").toLowerCase();
    let shown = f && !server ? rows.filter((r) => columns.some((c) => String(r[c.key] ?? "").toLowerCase().includes(f))) : rows.slice();
    const dir = state.asc ? 1 : -1;
    if (!server) shown.sort((a, b) => {
      const x = a[state.sort], y = b[state.sort];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    const limit = server ? shown.length : (state.limit || 500);
    const head = el("tr", {}, ...columns.map((c) => el("th", {
      class: (c.num ? "num " : "") + (state.sort === c.key ? "sorted" + (state.asc ? " asc" : "") : ""),
      onclick: () => {
        if (state.sort === c.key) state.asc = !state.asc; else { state.sort = c.key; state.asc = !c.num; }
        if (server) { state.offset = 0; state.reload(); } else table(box, columns, rows, state, rowClass);
      },
    }, c.label)));
    const body = shown.slice(0, limit).map((r) => el("tr", { class: rowClass ? rowClass(r) : "" },
      ...columns.map((c) => {
        const v = c.fmt ? c.fmt(r[c.key], r) : (c.num ? fmt.num(r[c.key]) : (r[c.key] ?? ""));
        const cell = el("td", { class: (c.num ? "num" : "") + (c.wrap ? " wrap" : "") });
        if (c.link) cell.append(el("a", { href: c.link(r) }, v)); else cell.append(v);
        return cell;
      })));
    const t = el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
    let note = shown.length > limit ? el("p", { class: "muted" }, `first ${limit} of ${shown.length}`) : "";
    if (server) {
      const from = state.offset || 0, total = state.total || 0, page = state.pageSize || 100;
      const button = (cls, off, to, label) => {
        const attrs = { type: "button", class: cls, onclick: () => { state.offset = Math.max(0, to); state.reload(); } };
        if (off) attrs.disabled = "";
        return el("button", attrs, label);
      };
      note = el("p", { class: "muted pager" },
        button("prev", from === 0, from - page, "previous"),
        ` ${total ? from + 1 : 0}–${from + shown.length} of ${total} `,
        button("next", from + shown.length >= total, from + page, "next"));
    }
    box.replaceChildren(el("div", { class: "scroll" }, t), note);
  }

  // Tabs by the URL's hash: `#hosts`, `#host/12`; returns the current [tab, arg].
  function route() {
    const [tab, ...rest] = (location.hash.slice(1) || "overview").split("/");
    for (const s of document.querySelectorAll("section[data-tab]")) s.classList.toggle("on", s.dataset.tab === tab);
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.getAttribute("href") === "#" + tab);
    return [tab, decodeURIComponent(rest.join("/"))];
  }

  function say(box, text, error) {
    box.textContent = text;
    box.className = "message" + (error ? " error" : "");
  }

  // A figure; a long text value (a URL, a date) is set smaller.
  const card = (label, value, id) => el("div", { class: String(value).length > 16 ? "card text" : "card", id: id || "" },
    el("div", { class: "label" }, label), el("div", { class: "value" }, value));

  return { el, api, stream, fmt, chart, rate, table, route, say, card };
})();
