// SPDX-License-Identifier: MIT
// The script of syscope's report.html (src/sinks/html.c inlines it): draws the page from
// the JSON in #syscope-data. Every recorded string goes in with textContent, never as
// markup. At the end it writes what it drew into #selfcheck (tests read it).
'use strict';
(function () {
  var errors = [];
  var SVG = 'http://www.w3.org/2000/svg';
  window.addEventListener('error', function (e) { errors.push(String(e.message)); check(); });

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    (kids || []).forEach(function (c) {
      e.appendChild(typeof c === 'object' && c !== null ? c : document.createTextNode(String(c)));
    });
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function secs(s) {
    if (s >= 1) return s.toFixed(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    return (s * 1e6).toFixed(3) + ' us';
  }
  function pct(x, total) { return total > 0 ? (100 * x / total).toFixed(1) + '%' : '-'; }
  function bytes(n) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
  }
  function table(head, rows, numeric) {
    var tr = el('tr', {}, head.map(function (h, i) {
      return el('th', numeric[i] ? { class: 'num' } : {}, [h]);
    }));
    var body = rows.map(function (r) {
      return el('tr', {}, r.map(function (c, i) {
        return el('td', { class: numeric[i] ? 'num' : (i === 0 || numeric[i] === false) ? 'name' : '' }, [c]);
      }));
    });
    return el('table', {}, [tr].concat(body));
  }
  function section(app, title, id) {
    var s = el('section', { id: id }, [el('h2', {}, [title])]);
    app.appendChild(s);
    return s;
  }

  var D = JSON.parse(document.getElementById('syscope-data').textContent);
  var app = document.getElementById('app');
  var drawn = { flame_nodes: 0, flame_top: null, flame_path: [], functions: 0, threads: 0, counters: 0,
                gpu_ops: 0, regions: 0 };
  app.textContent = '';

  function summary() {
    var S = D.summary, p0 = S.processes[0] || { argv: [] };
    document.title = 'syscope: ' + (p0.argv.join(' ') || p0.exe || 'report');
    app.appendChild(el('h1', {}, ['syscope report']));
    app.appendChild(el('div', { class: 'mono', id: 'command' }, [p0.argv.join(' ')]));
    var lost = S.lost.records + S.lost.samples;
    var rows = [
      ['duration', secs(S.seconds)], ['processes', String(S.processes.length)],
      ['threads', String(S.threads)], ['samples', String(S.samples)],
      ['lost', lost || S.lost.bytes ? S.lost.records + ' records, ' + S.lost.samples +
        ' samples, ' + bytes(S.lost.bytes) : 'nothing'],
      ['syscope', S.version]];
    app.appendChild(table(['', ''], rows, [false, false]));
    if (S.processes.length > 1)
      app.appendChild(table(['pid', 'parent', 'program', 'threads', 'time', 'end'],
        S.processes.map(function (p) {
          return [String(p.pid), String(p.ppid), p.argv.join(' ') || p.exe, String(p.threads),
                  secs(p.seconds), p.end + (p.status ? ' (' + p.status + ')' : '')];
        }), [true, true, false, true, true, false]));
    if (S.notes.length) {
      var ul = el('ul', {}, S.notes.map(function (n) {
        return el('li', { class: n.level === 'warning' ? 'warn' : '' }, ['[' + n.pid + '] ' + n.text]);
      }));
      app.appendChild(el('details', {}, [el('summary', {}, ['notes (' + S.notes_total + ')']), ul]));
    }
  }

  function functions(P) {
    var s = section(app, 'Top functions (' + P.metric + ', ' + P.samples + ' samples, ' +
                    secs(P.seconds) + ')', 'functions');
    function rows(key) {
      return P.functions.slice().sort(function (a, b) { return b[key] - a[key]; })
        .slice(0, 25).map(function (f) {
          return [f.name, secs(f.self), pct(f.self, P.seconds), secs(f.total),
                  pct(f.total, P.seconds), String(f.samples),
                  f.file ? f.file.split('/').pop() + ':' + f.line : f.module];
        });
    }
    var head = ['function', 'self', 'self %', 'total', 'total %', 'samples', 'where'];
    var num = [false, true, true, true, true, true, false];
    var bySelf = table(head, rows('self'), num), byTotal = table(head, rows('total'), num);
    bySelf.id = 'by-self';
    byTotal.id = 'by-total';
    s.appendChild(el('div', { class: 'cols' }, [
      el('div', {}, [el('h3', {}, ['by self time']), bySelf]),
      el('div', {}, [el('h3', {}, ['by total time']), byTotal])]));
    drawn.functions = P.functions.length;
  }

  function flame(P) {
    var s = section(app, 'Flame graph', 'flamegraph');
    var F = P.flame, N = F.nodes.length, kids = [], depth = new Array(N);
    var useSecs = P.seconds > 0, W = 1180, ROW = 17, focus = 0, term = '';
    for (var i = 0; i < N; i++) kids.push([]);
    for (i = 1; i < N; i++) kids[F.nodes[i][1]].push(i);
    depth[0] = 0;
    var maxDepth = 0;
    for (i = 1; i < N; i++) {
      depth[i] = depth[F.nodes[i][1]] + 1;
      if (depth[i] > maxDepth) maxDepth = depth[i];
    }
    function val(i) { return useSecs ? F.nodes[i][3] : F.nodes[i][2]; }
    function name(i) { return F.names[F.nodes[i][0]]; }
    var search = el('input', { type: 'search', id: 'flame-search', placeholder: 'search functions (regex)', size: 40 });
    var reset = el('button', { id: 'flame-reset' }, ['reset zoom']);
    var info = el('span', { class: 'muted', id: 'flame-info' }, ['']);
    var box = el('div', { id: 'flame-box' });
    s.appendChild(el('div', {}, [search, ' ', reset, ' ', info]));
    s.appendChild(box);
    function color(n) {
      var h = 0;
      for (var k = 0; k < n.length; k++) h = (h * 31 + n.charCodeAt(k)) >>> 0;
      return 'hsl(' + (10 + h % 40) + ',' + (70 + h % 20) + '%,' + (55 + h % 15) + '%)';
    }
    function draw() {
      var re = null;
      try { re = term ? new RegExp(term, 'i') : null; } catch (e) { re = null; }
      var g = svg('svg', { id: 'flame', viewBox: '0 0 ' + W + ' ' + (maxDepth + 1) * ROW,
                           height: (maxDepth + 1) * ROW });
      var chain = [], matched = 0;
      for (var a = focus; a; a = F.nodes[a][1]) chain.unshift(a);
      chain.unshift(0);
      // The focused node's ancestors span the width, dimmed.
      chain.forEach(function (a) { if (a !== focus) box1(a, 0, W, 'above'); });
      function box1(n, x, w, cls) {
        var e = svg('g', { class: cls || '', 'data-node': n, 'data-depth': depth[n] });
        var r = svg('rect', { x: x.toFixed(2), y: depth[n] * ROW, width: Math.max(w, 0.5).toFixed(2),
                              height: ROW - 1, fill: color(name(n)) });
        var t = svg('title');
        t.textContent = name(n) + ' (' + (useSecs ? secs(F.nodes[n][3]) : F.nodes[n][2] + ' samples') +
          ', ' + F.nodes[n][2] + ' samples, ' + pct(val(n), val(0)) + ')';
        e.appendChild(r);
        e.appendChild(t);
        if (w > 30) {
          var tx = svg('text', { x: (x + 3).toFixed(2), y: depth[n] * ROW + 12 });
          var label = name(n), fit = Math.floor((w - 6) / 6.6);
          tx.textContent = label.length > fit ? label.slice(0, Math.max(fit - 1, 0)) + '\u2026' : label;
          e.appendChild(tx);
        }
        if (re && re.test(name(n))) { e.setAttribute('class', (cls || '') + ' match'); matched++; }
        e.addEventListener('click', function () { focus = n; draw(); });
        g.appendChild(e);
      }
      function lay(n, x, w) {
        box1(n, x, w, '');
        drawn.flame_nodes++;
        var total = val(n), cx = x;
        kids[n].forEach(function (k) {
          var kw = total > 0 ? w * val(k) / total : 0;
          if (kw >= 0.3) lay(k, cx, kw);
          cx += kw;
        });
      }
      drawn.flame_nodes = 0;
      lay(focus, 0, W);
      box.textContent = '';
      box.appendChild(g);
      drawn.flame_matches = matched;
      drawn.flame_focus = focus ? name(focus) : null;
      info.textContent = (focus ? 'zoomed on ' + name(focus) + '; ' : '') +
        (re ? matched + ' matching frames; ' : '') + N + ' nodes';
    }
    search.addEventListener('input', function () { term = search.value; draw(); });
    reset.addEventListener('click', function () { focus = 0; term = ''; search.value = ''; draw(); });
    // report.html#search=REGEX&zoom=NAME opens searched and zoomed (on NAME's widest node).
    var want = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) want[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));
    });
    if (want.search) { term = want.search; search.value = term; }
    if (want.zoom)
      for (var z = 1, zw = -1; z < N; z++)
        if (name(z) === want.zoom && val(z) > zw) { zw = val(z); focus = z; }
    draw();
    function widest(n) {
      return kids[n].slice().sort(function (a, b) { return val(b) - val(a); })[0];
    }
    var top = widest(0), best = null, bestW = -1;
    // The root's widest child as drawn in the SVG.
    Array.prototype.forEach.call(document.querySelectorAll('#flame g[data-depth="1"]'), function (g) {
      var w = parseFloat(g.firstChild.getAttribute('width'));
      if (w > bestW) { bestW = w; best = name(+g.getAttribute('data-node')); }
    });
    drawn.flame_top = best;
    drawn.flame_path = [];
    for (var at = top; at !== undefined; at = widest(at)) drawn.flame_path.push(name(at));
  }

  function strip(values, max, w, h, hue) {
    var g = svg('svg', { class: 'strip', width: w, height: h, viewBox: '0 0 ' + w + ' ' + h });
    var bw = w / values.length;
    values.forEach(function (v, i) {
      if (!v) return;
      var a = max > 0 ? Math.min(v / max, 1) : 0;
      g.appendChild(svg('rect', { x: (i * bw).toFixed(2), y: 0, width: (bw + 0.3).toFixed(2), height: h,
                                  fill: 'hsl(' + hue + ',80%,' + (92 - 55 * a).toFixed(0) + '%)' }));
    });
    return g;
  }

  function threads(T) {
    if (!T.threads.length) return;
    var s = section(app, 'Threads over time (samples per ' + secs(T.span_ns * 1e-9 / T.buckets) +
                    ')', 'threads');
    var max = 0;
    T.threads.forEach(function (t) { t.buckets.forEach(function (v) { if (v > max) max = v; }); });
    s.appendChild(table(['thread', 'samples', 'activity'], T.threads.map(function (t) {
      return [t.name + ' (' + t.pid + '/' + t.tid + ')', String(t.samples), strip(t.buckets, max, 800, 12, 20)];
    }), [false, true, false]));
    drawn.threads = T.threads.length;
  }

  function counters(T) {
    if (!T.counters.length) return;
    var s = section(app, 'Counters', 'counters');
    // Tracks that never changed are a table row, the others a line each.
    var flat = T.counters.filter(function (c) { return c.min === c.max; });
    T.counters.filter(function (c) { return c.min !== c.max; }).forEach(function (c) {
      var w = 800, h = 60, pts = [], n = c.points.length, span = c.max - c.min || 1;
      c.points.forEach(function (v, i) {
        if (v === null) return;
        pts.push((i * w / n).toFixed(1) + ',' + (h - 2 - (v - c.min) / span * (h - 4)).toFixed(1));
      });
      var g = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, class: 'strip' });
      g.appendChild(svg('rect', { x: 0, y: 0, width: w, height: h, fill: '#f6f6f6' }));
      g.appendChild(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: '#26a', 'stroke-width': 1.2 }));
      s.appendChild(el('div', { class: 'label' }, [c.name + (c.unit ? ' (' + c.unit + ')' : '') +
        ' [pid ' + c.pid + ']: min ' + c.min.toPrecision(4) + ', max ' + c.max.toPrecision(4) +
        ', ' + c.values + ' values']));
      s.appendChild(g);
    });
    if (flat.length)
      s.appendChild(el('details', {}, [el('summary', {}, [flat.length + ' tracks that kept one value']),
        table(['track', 'pid', 'value', 'values'], flat.map(function (c) {
          return [c.name + (c.unit ? ' (' + c.unit + ')' : ''), String(c.pid), c.min.toPrecision(6), String(c.values)];
        }), [false, true, true, true])]));
    if (T.counters_left_out)
      s.appendChild(el('p', { class: 'muted' }, [T.counters_left_out + ' values of further tracks not shown']));
    drawn.counters = T.counters.length;
  }

  function gpu(T) {
    if (!T.gpu_ops.length && !T.gpu_agents.length) return;
    var s = section(app, 'GPU', 'gpu');
    D.gpu_idle.forEach(function (l) { s.appendChild(el('p', { class: 'warn idle' }, [l])); });
    T.gpu_agents.forEach(function (a) {
      s.appendChild(el('div', { class: 'label' }, ['GPU ' + a.agent + ' ' + a.name + ' [pid ' + a.pid + ']: busy ' +
        a.busy_percent.toFixed(1) + '% of the run, ' + a.ops + ' operations']));
      s.appendChild(strip(a.buckets, 1, 800, 12, 130));
    });
    s.appendChild(table(['operation', 'kind', 'count', 'total', 'mean', 'min', 'max', 'bytes'],
      T.gpu_ops.slice(0, 200).map(function (o) {
        return [o.name, o.kind, String(o.count), secs(o.total), secs(o.mean), secs(o.min), secs(o.max),
                o.bytes ? bytes(o.bytes) : ''];
      }), [false, false, true, true, true, true, true, true]));
    if (T.gpu_ops.length > 200) s.appendChild(el('p', { class: 'muted' }, [(T.gpu_ops.length - 200) + ' more']));
    drawn.gpu_ops = T.gpu_ops.length;
  }

  function regions(T) {
    if (!T.regions.length) return;
    var s = section(app, 'Regions (MPI, OpenMP, NVTX, instrumented functions...)', 'regions');
    s.appendChild(table(['region', 'category', 'count', 'total', 'mean', 'min', 'max'],
      T.regions.slice(0, 200).map(function (r) {
        return [r.name, r.category, String(r.count), secs(r.total), secs(r.mean), secs(r.min), secs(r.max)];
      }), [false, false, true, true, true, true, true]));
    if (T.regions.length > 200) s.appendChild(el('p', { class: 'muted' }, [(T.regions.length - 200) + ' more']));
    drawn.regions = T.regions.length;
  }

  function perfetto() {
    var s = section(app, 'The full trace in Perfetto', 'perfetto'), P = D.perfetto;
    if (P.files.length)
      s.appendChild(el('p', {}, ['Open ', el('code', {}, [P.files.join(', ')]),
        ' (beside this report) at ui.perfetto.dev: "Open trace file", or drag it there.']));
    else
      s.appendChild(el('p', {}, ['Make a trace with ', el('code', {}, [P.command]),
        ', then open the .pftrace file at ui.perfetto.dev.']));
  }

  function check() {
    var c = document.getElementById('selfcheck');
    if (!c) { c = el('pre', { id: 'selfcheck' }); document.body.appendChild(c); }
    drawn.errors = errors;
    drawn.status = errors.length ? 'error' : 'ok';
    drawn.ms = Math.round(performance.now());
    c.textContent = JSON.stringify(drawn);
  }

  var parts = [summary, function () { if (D.profile) functions(D.profile); },
               function () { if (D.profile) flame(D.profile); },
               function () { threads(D.timeline); }, function () { counters(D.timeline); },
               function () { gpu(D.timeline); }, function () { regions(D.timeline); }, perfetto];
  parts.forEach(function (f) {
    try { f(); } catch (e) { errors.push(String(e && e.stack || e)); }
  });
  check();
})();
