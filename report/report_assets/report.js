/* cudasnap report: lays out what `cudasnap report` computed (the JSON in #cs-data, described in
 * report/report_data.h and report/report_device.h). Everything here is drawing: the numbers, the
 * allocation sites and the down-sampling all come from the tool, so the page and
 * `cudasnap summary` cannot disagree.
 *
 * Charts are canvases drawn from pre-aggregated series, and only what is visible is drawn: the
 * timeline holds a few thousand points at most, and the segment map draws the rows in view. */
(function () {
  'use strict';

  var DATA = JSON.parse(document.getElementById('cs-data').textContent);
  /* band colours of the top sites (colour-blind-friendly, Tableau 10 minus red), then "other" */
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
  var OTHER = '#c3cad1';
  var FREE = '#e9ecef';
  var PENDING = '#f5b041';
  var OOM = '#d62728';
  var PHASE_LANES = 8; /* threads whose phases the memory chart draws, one row each */

  /* ---------------------------------------------------------------------------------------------
   * Formatting
   * ------------------------------------------------------------------------------------------- */

  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

  /* "13.0 GiB", as `cudasnap summary` writes the readable part; "512 B" below 1 KiB */
  function bytes(n) {
    if (n < 1024) return Math.round(n) + ' B';
    var v = n, u = 0;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return v.toFixed(1) + ' ' + UNITS[u];
  }
  function exact(n) { return Math.round(n).toLocaleString('en-US') + ' B'; }
  function count(n) { return Math.round(n).toLocaleString('en-US'); }
  function plural(n, word) { return count(n) + ' ' + word + (n === 1 ? '' : 's'); }
  function percent(part, whole) {
    if (!whole) return '';
    var p = 100 * part / whole;
    return (p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)) + '%';
  }
  function pad(n, w) { var s = String(n); while (s.length < w) s = '0' + s; return s; }
  /* wall-clock time of day, UTC, from microseconds since the epoch */
  function clock(us) {
    var d = new Date(Math.floor(us / 1000));
    return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1, 2) + '-' + pad(d.getUTCDate(), 2) + ' ' + pad(d.getUTCHours(), 2) + ':' + pad(d.getUTCMinutes(), 2) + ':' + pad(d.getUTCSeconds(), 2) + '.' +
      pad(d.getUTCMilliseconds(), 3) + ' UTC';
  }
  function seconds(us) {
    var s = us / 1e6;
    if (Math.abs(s) >= 100) return s.toFixed(0) + ' s';
    if (Math.abs(s) >= 1) return s.toFixed(2) + ' s';
    return (us / 1000).toFixed(us % 1000 === 0 ? 0 : 1) + ' ms';
  }
  function basename(path) {
    var i = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
    return i >= 0 ? path.slice(i + 1) : path;
  }

  /* ---------------------------------------------------------------------------------------------
   * DOM helpers
   * ------------------------------------------------------------------------------------------- */

  /* el('div', {class: 'x', text: 'y', title: 'z', onclick: f}, [children]) */
  function el(tag, props, kids) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (k) {
      var v = p[k];
      if (v === undefined || v === null) return;
      if (k === 'text') node.textContent = v;
      else if (k === 'class') node.className = v;
      else if (k === 'style') node.setAttribute('style', v);
      else if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    });
    (kids || []).forEach(function (kid) {
      if (kid === null || kid === undefined) return;
      node.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : kid);
    });
    return node;
  }

  function swatch(color) { return el('span', {class: 'swatch', style: 'background:' + color}); }

  /* One tooltip for the whole page, placed next to the pointer. */
  var tip = el('div', {class: 'tip', id: 'tip'});
  document.body.appendChild(tip);
  function showTip(event, kids) {
    tip.replaceChildren.apply(tip, kids);
    tip.style.display = 'block';
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = event.clientX + 16, y = event.clientY + 16;
    if (x + w > window.innerWidth - 8) x = Math.max(8, event.clientX - w - 16);
    if (y + h > window.innerHeight - 8) y = Math.max(8, event.clientY - h - 16);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }

  /* A canvas sized to its box in device pixels; returns its 2D context scaled to CSS pixels. */
  function fit(canvas, width, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(width * dpr));
    canvas.height = Math.max(1, Math.round(height * dpr));
    canvas.style.height = height + 'px';
    var g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return g;
  }

  /* ---------------------------------------------------------------------------------------------
   * Sites and stacks
   * ------------------------------------------------------------------------------------------- */

  /* the position of the "(no stack)" site, the site of blocks without frames; -1 if none */
  /* the site "(no stack)"; set again when the job page opens another process's data */
  function noStackSite() { return DATA.sites ? DATA.sites.findIndex(function (s) { return s[0] === null; }) : -1; }
  var NO_STACK_SITE = noStackSite();

  function site(i) {
    var s = i >= 0 ? DATA.sites[i] : null;
    return s ? {name: s[0], file: s[1], line: s[2], stack: s[3]} : {name: null, file: '', line: 0, stack: -1};
  }
  function siteName(i) { var s = site(i); return s.name === null ? '(no stack)' : s.name; }
  function siteWhere(i) { var s = site(i); return s.name === null ? '' : basename(s.file) + ':' + s.line; }
  function siteFull(i) { var s = site(i); return s.name === null ? '(no stack)' : s.name + ' ' + s.file + ':' + s.line; }

  /* The frames of a stack, each {name, file, line}, innermost first. */
  function frames(stack) {
    if (stack < 0 || !DATA.stacks[stack]) return [];
    return DATA.stacks[stack].map(function (f) {
      var fr = DATA.frames[f];
      return {name: fr[0], file: fr[1], line: fr[2]};
    });
  }

  /* A stack as a list, the site's frame marked and the frames inside it (CUDA's, the allocator's)
   * dimmed. limit: frames shown from the site's frame on (0: all). */
  function stackList(stack, siteIndex, limit) {
    var fs = frames(stack);
    if (!fs.length) return el('p', {class: 'note', text: 'No stack was recorded for this allocation.'});
    var s = site(siteIndex), at = -1;
    fs.forEach(function (f, i) {
      if (at < 0 && s.name !== null && f.name === s.name && f.file === s.file && f.line === s.line) at = i;
    });
    var from = limit && at > 0 ? at : 0;
    var to = limit ? Math.min(fs.length, from + limit) : fs.length;
    var items = [];
    if (from > 0) items.push(el('li', {class: 'more', text: from + ' frames inside CUDA and its libraries not shown'}));
    for (var i = from; i < to; i++) {
      var f = fs[i];
      items.push(el('li', {class: i === at ? 'site' : (i < at ? 'inner' : null), title: f.file + ':' + f.line}, [
        el('span', {class: 'fn', text: f.name}), el('span', {class: 'at', text: '  ' + basename(f.file) + ':' + f.line})]));
    }
    if (to < fs.length) items.push(el('li', {class: 'more', text: '... ' + (fs.length - to) + ' outer frames'}));
    return el('ol', {class: 'frames'}, items);
  }

  /* ---------------------------------------------------------------------------------------------
   * Axes
   * ------------------------------------------------------------------------------------------- */

  function niceStep(range, ticks) {
    var raw = range / ticks;
    if (!(raw > 0)) return 1;
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * mag >= raw) return steps[i] * mag;
    return 10 * mag;
  }

  /* Byte ticks in the unit that suits the largest value: [{value, label}] */
  function byteTicks(max, ticks) {
    var u = 0;
    while (u < UNITS.length - 1 && max / Math.pow(1024, u + 1) >= 1) u++;
    var scale = Math.pow(1024, u), step = niceStep(max / scale, ticks), out = [];
    for (var v = 0; v <= max / scale + 1e-9; v += step) {
      out.push({value: v * scale, label: (Math.round(v * 100) / 100) + ' ' + UNITS[u]});
    }
    return out;
  }

  /* ---------------------------------------------------------------------------------------------
   * Memory over time
   * ------------------------------------------------------------------------------------------- */

  var MARGIN = {left: 78, right: 18, top: 22, bottom: 30};

  function Timeline(dev, onHoverSite) {
    var tl = dev.timeline, n = tl.state.length, self = this;
    this.dev = dev;
    this.n = n;
    this.mode = 'entries';
    /* Stacking order: the sites that hold the most bytes on average over the trace at the bottom
     * (weights, caches: flat), the ones that come and go above them, "other sites" on top; so a
     * steady site is drawn flat instead of riding on the waves of the others. */
    var others = tl.bands.length - 1, mean = tl.bands.map(function (band) {
      var sum = 0;
      for (var i = 0; i < n; i++) sum += band[i] * ((i + 1 < n ? tl.state[i + 1] : dev.events + 1) - tl.state[i]);
      return sum;
    });
    this.order = tl.bands.map(function (b, k) { return k; }).filter(function (k) { return k < others; });
    this.order.sort(function (a, b) { return mean[b] - mean[a] || a - b; });
    this.order.push(others);
    /* cumulative tops of the bands, in stacking order, bottom first */
    this.tops = [];
    var running = new Float64Array(n);
    this.order.forEach(function (k) {
      var band = tl.bands[k], top = new Float64Array(n);
      for (var i = 0; i < n; i++) { running[i] += band[i]; top[i] = running[i]; }
      self.tops.push(top);
    });
    this.allocated = running;
    var ymax = 1;
    for (var i = 0; i < n; i++) ymax = Math.max(ymax, running[i], tl.reserved[i]);
    this.ymax = ymax * 1.06;
    this.box = el('div', {class: 'canvas-box'});
    this.canvas = el('canvas', {id: 'timeline-' + dev.device, 'aria-label': 'memory over time'});
    this.overlay = el('canvas', {style: 'position:absolute;left:0;top:0;pointer-events:none;width:100%'});
    this.box.appendChild(this.canvas);
    this.box.appendChild(this.overlay);
    this.height = 330;
    this.canvas.addEventListener('mousemove', function (e) { self.hover(e, onHoverSite); });
    this.canvas.addEventListener('mouseleave', function () { self.clearHover(); hideTip(); });
  }

  Timeline.prototype.colors = function () {
    var dev = this.dev, out = [];
    for (var k = 0; k < dev.bands.length; k++) out.push(PALETTE[k % PALETTE.length]);
    out.push(OTHER);
    return out;
  };

  /* x of the domain value v, and the domain of the current mode */
  Timeline.prototype.domain = function () {
    var tl = this.dev.timeline;
    if (this.mode === 'time') {
      var t0 = tl.time[0], t1 = tl.time[this.n - 1];
      return [t0, t1 > t0 ? t1 : t0 + 1];
    }
    return [0, Math.max(1, this.dev.events)];
  };
  Timeline.prototype.xOfPoint = function (i) {
    return this.mode === 'time' ? this.dev.timeline.time[i] : this.dev.timeline.state[i];
  };
  Timeline.prototype.scales = function () {
    var d = this.domain(), w = this.width, h = this.height;
    var x0 = MARGIN.left, x1 = w - MARGIN.right, y0 = h - MARGIN.bottom, y1 = MARGIN.top, ymax = this.ymax;
    return {
      x: function (v) { return x0 + (v - d[0]) / (d[1] - d[0]) * (x1 - x0); },
      xInv: function (px) { return d[0] + (px - x0) / (x1 - x0) * (d[1] - d[0]); },
      y: function (v) { return y0 - v / ymax * (y0 - y1); },
      yInv: function (py) { return (y0 - py) / (y0 - y1) * ymax; },
      x0: x0, x1: x1, y0: y0, y1: y1, d: d
    };
  };

  Timeline.prototype.draw = function () {
    var dev = this.dev, tl = dev.timeline, n = this.n, self = this;
    this.width = this.box.clientWidth;
    var g = fit(this.canvas, this.width, this.height);
    fit(this.overlay, this.width, this.height);
    var s = this.scales();
    g.clearRect(0, 0, this.width, this.height);
    g.font = '11px system-ui, sans-serif';

    /* y grid */
    g.strokeStyle = '#eef1f3';
    g.fillStyle = '#5f6b76';
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    byteTicks(this.ymax, 5).forEach(function (t) {
      var y = Math.round(s.y(t.value)) + 0.5;
      g.beginPath(); g.moveTo(s.x0, y); g.lineTo(s.x1, y); g.stroke();
      g.fillText(t.label, s.x0 - 6, y);
    });
    /* x ticks */
    g.textAlign = 'center';
    g.textBaseline = 'top';
    var span = s.d[1] - s.d[0], step = niceStep(span, Math.max(2, Math.floor((s.x1 - s.x0) / 110)));
    /* entries: multiples of the step; time: the step's multiples since the first entry */
    var from = this.mode === 'time' ? s.d[0] : Math.ceil(s.d[0] / step) * step;
    for (var v = from; v <= s.d[1]; v += step) {
      var x = Math.round(s.x(v)) + 0.5;
      g.strokeStyle = '#d9dee3';
      g.beginPath(); g.moveTo(x, s.y0); g.lineTo(x, s.y0 + 4); g.stroke();
      var tick = this.mode === 'time' ? '+' + seconds(v - s.d[0]) : count(v);
      /* the last label stays inside the canvas */
      g.textAlign = x + g.measureText(tick).width / 2 > this.width - 2 ? 'right' : 'center';
      g.fillText(tick, g.textAlign === 'right' ? this.width - 2 : x, s.y0 + 6);
    }
    g.fillStyle = '#8a96a1';
    g.textAlign = 'right';
    g.fillText(this.mode === 'time' ? 'time since the first entry' : 'trace entry', s.x1, s.y0 + 17);

    /* the bands, as steps: a value holds until the next point */
    var xs = new Float64Array(n);
    for (var i = 0; i < n; i++) xs[i] = s.x(this.xOfPoint(i));
    this.xs = xs;
    var colors = this.colors();
    for (var k = this.tops.length - 1; k >= 0; k--) {
      var top = this.tops[k], bottom = k > 0 ? this.tops[k - 1] : null;
      g.beginPath();
      g.moveTo(xs[0], s.y(top[0]));
      for (i = 0; i < n; i++) {
        var xe = i + 1 < n ? xs[i + 1] : s.x1;
        g.lineTo(xs[i], s.y(top[i]));
        g.lineTo(xe, s.y(top[i]));
      }
      for (i = n - 1; i >= 0; i--) {
        var xe2 = i + 1 < n ? xs[i + 1] : s.x1, yb = s.y(bottom ? bottom[i] : 0);
        g.lineTo(xe2, yb);
        g.lineTo(xs[i], yb);
      }
      g.closePath();
      g.fillStyle = colors[this.order[k]];
      g.fill();
    }
    /* reserved */
    g.strokeStyle = '#2d3640';
    g.lineWidth = 1.5;
    g.setLineDash([5, 3]);
    g.beginPath();
    for (i = 0; i < n; i++) {
      var xr = i + 1 < n ? xs[i + 1] : s.x1, yr = s.y(tl.reserved[i]);
      if (i === 0) g.moveTo(xs[0], yr); else g.lineTo(xs[i], yr);
      g.lineTo(xr, yr);
    }
    g.stroke();
    g.setLineDash([]);
    g.lineWidth = 1;

    /* phases (external_annotations: NVTX ranges, record_function), each thread's its own: with
       one thread (or none recorded), its top-level ones and those just inside them in two rows;
       with several, one row per thread (the first PHASE_LANES), the inner ones drawn over the
       top-level ones, never one thread's phases nested in another's */
    var lanes = (dev.phase_threads || []).length;
    var several = lanes > 1;
    /* with several threads, a row's label is the innermost drawn: "OUTER > INNER" on an inner
       phase, the outer name alone where nothing is inside it */
    var outerOf = [], hasInner = [], lastOuter = {};
    (dev.phases || []).forEach(function (p, i) {
      var lane = p.length > 6 ? p[6] : 0;
      if (p[1] === 0) lastOuter[lane] = i;
      else if (p[1] === 1 && lastOuter[lane] !== undefined) {
        outerOf[i] = dev.phases[lastOuter[lane]][0];
        hasInner[lastOuter[lane]] = true;
      }
    });
    (dev.phases || []).forEach(function (p, i) {
      var lane = p.length > 6 ? p[6] : 0;
      if (p[1] > 1 || lane >= PHASE_LANES) return;
      var a = self.mode === 'time' ? p[4] : p[2];
      var b = self.mode === 'time' ? (p[5] >= 0 ? p[5] : s.d[1]) : p[3];
      var xa = Math.max(s.x0, s.x(a)), xb = Math.min(s.x1, s.x(b));
      if (xb < xa) return;
      var y = s.y1 + (several ? lane : p[1]) * 11;
      var h = several && p[1] === 1 ? 6 : 10;
      var label = !several ? p[0]
        : p[1] === 1 ? (outerOf[i] ? outerOf[i] + ' > ' : '') + p[0]
        : hasInner[i] ? '' : p[0];
      g.save();
      g.fillStyle = p[1] === 0 ? 'rgba(70, 100, 150, 0.22)' : 'rgba(150, 100, 70, 0.25)';
      g.fillRect(xa, y + 10 - h, Math.max(1, xb - xa), h);
      if (label && xb - xa > 30) {
        g.beginPath(); g.rect(xa, y, xb - xa, 10); g.clip();
        g.fillStyle = '#22303c';
        g.font = '9px sans-serif';
        g.textAlign = 'left';
        g.textBaseline = 'top';
        g.fillText(label, xa + 2, y + 1);
      }
      g.restore();
    });

    /* markers: OOMs (red lines) and snapshots (grey ticks) */
    dev.markers.forEach(function (m) {
      var mx = self.mode === 'time' ? (m[2] >= 0 ? m[2] : null) : m[1];
      if (mx === null) return;
      var px = Math.round(s.x(mx)) + 0.5;
      if (m[0] === 'oom') {
        g.strokeStyle = OOM;
        g.lineWidth = 2;
        g.beginPath(); g.moveTo(px, s.y1); g.lineTo(px, s.y0); g.stroke();
        g.lineWidth = 1;
        g.fillStyle = OOM;
        g.textAlign = 'center';
        g.textBaseline = 'bottom';
        g.fillText('OOM', px, s.y1 - 2);
      } else {
        g.strokeStyle = '#5f6b76';
        g.beginPath(); g.moveTo(px, s.y0 - 8); g.lineTo(px, s.y0); g.stroke();
      }
    });

    /* the peak */
    var peakX = this.mode === 'time' ? dev.peak.time_us : dev.peak.after;
    if (this.mode === 'time' && peakX < 0) peakX = tl.time[0];
    var px = Math.round(s.x(peakX)) + 0.5, py = s.y(dev.peak.bytes);
    g.strokeStyle = '#111';
    g.setLineDash([3, 3]);
    g.beginPath(); g.moveTo(px, s.y0); g.lineTo(px, MARGIN.top - 4); g.stroke();
    g.setLineDash([]);
    g.fillStyle = '#111';
    g.beginPath(); g.arc(px, py, 3.5, 0, 2 * Math.PI); g.fill();
    g.font = '600 12px system-ui, sans-serif';
    g.textBaseline = 'bottom';
    var label = 'peak ' + bytes(dev.peak.bytes);
    g.textAlign = px > s.x1 - 120 ? 'right' : 'left';
    g.fillText(label, g.textAlign === 'right' ? px - 5 : px + 5, MARGIN.top + 10);

    /* axes */
    g.strokeStyle = '#aab4be';
    g.beginPath(); g.moveTo(s.x0 + 0.5, s.y1); g.lineTo(s.x0 + 0.5, s.y0 + 0.5); g.lineTo(s.x1, s.y0 + 0.5); g.stroke();
  };

  /* The point whose step covers pixel px (the last point at or left of it). */
  Timeline.prototype.pointAt = function (px) {
    var xs = this.xs, lo = 0, hi = this.n - 1;
    if (px <= xs[0]) return 0;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (xs[mid] <= px) lo = mid; else hi = mid - 1;
    }
    return lo;
  };

  Timeline.prototype.clearHover = function () {
    var g = this.overlay.getContext('2d');
    g.save(); g.setTransform(1, 0, 0, 1, 0, 0); g.clearRect(0, 0, this.overlay.width, this.overlay.height); g.restore();
  };

  Timeline.prototype.hover = function (e, onHoverSite) {
    if (!this.xs) return;
    var rect = this.canvas.getBoundingClientRect(), mx = e.clientX - rect.left, my = e.clientY - rect.top;
    var s = this.scales();
    if (mx < s.x0 || mx > s.x1 || my < s.y1 - 10 || my > s.y0) { this.clearHover(); hideTip(); return; }
    var i = this.pointAt(mx), dev = this.dev, tl = dev.timeline;
    var value = s.yInv(my), band = -1;
    for (var k = 0; k < this.tops.length; k++) {
      var below = k > 0 ? this.tops[k - 1][i] : 0;
      if (value >= below && value < this.tops[k][i]) { band = this.order[k]; break; }
    }
    /* crosshair */
    this.clearHover();
    var g = this.overlay.getContext('2d');
    g.strokeStyle = 'rgba(0,0,0,.55)';
    g.beginPath(); g.moveTo(Math.round(mx) + 0.5, s.y1); g.lineTo(Math.round(mx) + 0.5, s.y0); g.stroke();

    var head = 'after entry ' + count(tl.state[i]) + ' of ' + count(dev.events);
    if (dev.has_time && tl.time[i] >= 0) head += ' \u00b7 +' + seconds(tl.time[i] - tl.time[0]) + ' (' + clock(tl.time[i]) + ')';
    var kids = [
      el('div', {class: 'row head', text: head}),
      el('div', {class: 'row', text: 'live ' + bytes(this.allocated[i]) + ' \u00b7 reserved ' + bytes(tl.reserved[i])})
    ];
    if (band >= 0) {
      var bandBytes = tl.bands[band][i], colors = this.colors();
      if (band < dev.bands.length) {
        var si = dev.bands[band];
        kids.push(el('div', {class: 'row'}, [swatch(colors[band]),
          el('b', {text: siteName(si)}), ' ' + siteWhere(si) + ' \u00b7 ' + bytes(bandBytes)]));
        kids.push(el('div', {class: 'stack'}, [stackList(site(si).stack, si, 10)]));
        if (onHoverSite) onHoverSite(si);
      } else {
        kids.push(el('div', {class: 'row'}, [swatch(OTHER), el('b', {text: 'other sites'}), ' \u00b7 ' + bytes(bandBytes)]));
      }
    }
    showTip(e, kids);
  };

  function timelineSection(dev) {
    var sec = el('section', {id: 'timeline'});
    var head = el('div', {class: 'chart-head'}, [el('h2', {text: 'Memory over time'})]);
    sec.appendChild(head);
    if (!dev.events) {
      sec.appendChild(el('p', {class: 'empty', text: 'This snapshot has no trace for device ' + dev.device +
        ' (recorded with history off, or a bare segment list), so there is nothing to draw over time: ' +
        'the sections below show the memory at the snapshot.'}));
      return {node: sec};
    }
    var chart = new Timeline(dev);
    var colors = chart.colors(), legend = el('div', {class: 'legend'});
    dev.bands.forEach(function (si, k) {
      legend.appendChild(el('span', {title: siteFull(si)}, [swatch(colors[k]), siteName(si),
        el('span', {class: 'where', text: siteWhere(si)})]));
    });
    if (dev.timeline.bands.length > dev.bands.length) legend.appendChild(el('span', {}, [swatch(OTHER), 'other sites']));
    legend.appendChild(el('span', {}, [el('span', {class: 'swatch line'}), 'reserved']));
    head.appendChild(legend);
    var byEntry = el('button', {class: 'on', text: 'entries'}), byTime = el('button', {text: 'time'});
    if (!dev.has_time) {
      byTime.disabled = true;
      byTime.title = 'the trace entries carry no time_us';
    }
    function set(mode) {
      chart.mode = mode;
      byEntry.className = mode === 'entries' ? 'on' : '';
      byTime.className = mode === 'time' ? 'on' : '';
      chart.draw();
    }
    byEntry.addEventListener('click', function () { set('entries'); });
    byTime.addEventListener('click', function () { set('time'); });
    head.appendChild(el('div', {class: 'switch', title: 'x axis'}, [byEntry, byTime]));
    sec.appendChild(el('p', {class: 'hint', text: 'Live bytes (requested sizes: the cache\u2019s blocks and memory passed through ' +
      'it) after each trace entry, split by the top allocation sites at the peak (the steadiest at the bottom); the dashed line is ' +
      'reserved bytes (the cache\u2019s segments). ' +
      'Hover for the time, the bytes and the site under the pointer with its stack.' +
      (dev.timeline.state.length < dev.events + 1 ? ' ' + count(dev.events) + ' entries drawn as ' +
        count(dev.timeline.state.length) + ' points, each stretch keeping its highest and lowest.' : '')}));
    sec.appendChild(chart.box);
    if (dev.phases && dev.phases.length) {
      var threads = (dev.phase_threads || []);
      var named = threads.filter(function (t) { return t[1]; }).map(function (t) { return t[1]; });
      var rows = threads.length > 1
        ? ', one row per thread, from the top: ' + named.slice(0, PHASE_LANES).join('; ') +
          (threads.length > PHASE_LANES ? '; ' + count(threads.length - PHASE_LANES) + ' more threads not drawn' : '') +
          ' (each row its thread\'s top-level phases, and those just inside them over them)'
        : ': top-level ones, and those just inside them' + (named.length ? ' (' + named[0] + ')' : '');
      sec.appendChild(el('p', {class: 'note', text: plural(dev.phases.length, 'phase') +
        ' of the program (NVTX ranges, record_function) along the top' + rows +
        (dev.phases_left_out ? '; ' + count(dev.phases_left_out) + ' more left out' : '') + '.'}));
    }
    var markers = dev.markers.filter(function (m) { return m[0] === 'oom'; }).length;
    if (markers) sec.appendChild(el('p', {class: 'note', text: plural(markers, 'out-of-memory error') + ' (red lines).'}));
    return {node: sec, draw: function () { chart.draw(); }};
  }

  /* ---------------------------------------------------------------------------------------------
   * At the peak
   * ------------------------------------------------------------------------------------------- */

  function peakSection(dev) {
    var sec = el('section', {id: 'peak'});
    var title = dev.events ? 'At the peak: ' + bytes(dev.peak.bytes) + ' requested, by site'
                           : 'Requested at the snapshot: ' + bytes(dev.peak.bytes) + ', by site';
    sec.appendChild(el('h2', {text: title}));
    sec.appendChild(el('p', {class: 'hint', text: 'Requested bytes of the blocks live ' +
      (dev.events ? 'after entry ' + count(dev.peak.after) + ' of ' + count(dev.events) : 'at the snapshot') +
      ', largest first. Hover a site to see its stack; click to keep it.'}));
    var bandOf = {};
    dev.bands.forEach(function (si, k) { bandOf[si] = k; });
    var panel = el('div', {class: 'stack-panel', id: 'stack-panel'});
    var pinned = null;
    function show(si, bytesHeld, blocks) {
      var s = site(si);
      var kids = [
        el('div', {class: 'title', text: siteName(si) + (s.name !== null ? '  ' + basename(s.file) + ':' + s.line : '')}),
        el('div', {class: 'sub', text: bytes(bytesHeld) + ' in ' + plural(blocks, 'block') +
          (s.name !== null ? ' \u00b7 ' + s.file : '')})];
      if (s.stack >= 0) kids.push(el('div', {class: 'sub', text: 'The stack of its largest block (innermost frame first):'}));
      kids.push(stackList(s.stack, si, 0));
      panel.replaceChildren.apply(panel, kids);
    }
    function placeholder() {
      panel.replaceChildren(el('div', {class: 'sub', text: 'Hover a site to see where it was allocated; click one to keep it here.'}));
    }
    placeholder();
    var list = el('div', {class: 'sites', id: 'peak-sites'});
    var top = dev.peak_sites.length ? dev.peak_sites[0][1] : 1;
    var rows = [];
    dev.peak_sites.forEach(function (row) {
      var si = row[0], color = bandOf[si] !== undefined ? PALETTE[bandOf[si] % PALETTE.length] : OTHER;
      var node = el('div', {class: 'site-row', 'data-site': si, title: siteFull(si)}, [
        swatch(color),
        el('div', {}, [el('div', {class: 'name', text: siteName(si)}), el('div', {class: 'where', text: siteWhere(si)})]),
        el('div', {class: 'bytes', text: bytes(row[1])}),
        el('div', {class: 'pct', text: percent(row[1], dev.peak.bytes)}),
        el('div', {class: 'bar'}, [el('i', {style: 'width:' + (100 * row[1] / top).toFixed(2) + '%;background:' + color})])
      ]);
      node.addEventListener('mouseenter', function () { show(si, row[1], row[2]); });
      node.addEventListener('click', function () {
        if (pinned) pinned.node.classList.remove('on');
        pinned = pinned && pinned.node === node ? null : {node: node, si: si, row: row};
        if (pinned) { node.classList.add('on'); show(si, row[1], row[2]); }
      });
      rows.push(node);
      list.appendChild(node);
    });
    var more = dev.peak_sites_more;
    if (more[0]) {
      list.appendChild(el('div', {class: 'site-row more'}, [el('span'), el('div', {text: count(more[0]) +
        ' more sites'}), el('div', {class: 'bytes', text: bytes(more[1])}), el('div', {class: 'pct', text: percent(more[1], dev.peak.bytes)})]));
    }
    if (!dev.peak_sites.length) list.appendChild(el('p', {class: 'empty', text: 'No block was allocated then.'}));
    list.addEventListener('mouseleave', function () {
      if (pinned) show(pinned.si, pinned.row[1], pinned.row[2]); else placeholder();
    });
    sec.appendChild(el('div', {class: 'peak-grid'}, [list, panel]));
    return {node: sec};
  }

  /* ---------------------------------------------------------------------------------------------
   * Segments
   * ------------------------------------------------------------------------------------------- */

  var ROW = 18, LABEL = 250;

  function segmentSection(dev) {
    var sec = el('section', {id: 'segments'});
    sec.appendChild(el('h2', {text: 'Segments at the snapshot'}));
    var bandOf = {};
    dev.bands.forEach(function (si, k) { bandOf[si] = k; });
    var segs = dev.segments.map(function (s) {
      var flat = s[4], seg = {addr: s[0], total: s[1], pool: s[2], stream: s[3], flat: flat, kind: s[5] || null,
                              allocated: 0, pending: 0, free: 0, largestFree: 0, blocks: 0};
      for (var j = 0; j < flat.length; j += 5) {
        var size = flat[j], state = flat[j + 2];
        seg.blocks += flat[j + 4];
        if (state === 0) seg.allocated += size;
        else if (state === 1) seg.pending += size;
        else { seg.free += size; seg.largestFree = Math.max(seg.largestFree, size); }
      }
      return seg;
    });
    segs.sort(function (a, b) { return b.total - a.total || (a.addr < b.addr ? -1 : 1); });
    /* reserved: the cache's segments; memory passed through is counted apart */
    var reserved = 0, free = 0, pending = 0, largest = 0, passed = 0, cacheSegs = 0;
    segs.forEach(function (s) {
      if (s.kind) { passed += s.total; return; }
      reserved += s.total; cacheSegs++; free += s.free; pending += s.pending; largest = Math.max(largest, s.largestFree);
    });
    if (!segs.length) {
      sec.appendChild(el('p', {class: 'empty', text: 'No segment on this device at the snapshot: all its memory was returned to the driver.'}));
      return {node: sec};
    }
    var inside = dev.inside.rounding + dev.inside.gaps;
    sec.appendChild(el('p', {class: 'callout'}, [
      el('b', {text: bytes(inside) + ' free inside segments'}),
      ' (' + percent(inside, reserved) + ' of ' + bytes(reserved) + ' reserved in ' + plural(cacheSegs, 'segment') +
      '): ' + bytes(dev.inside.gaps) + ' in free blocks, the largest ' + bytes(largest) + '; ' +
      bytes(dev.inside.rounding) + ' of rounding inside allocated blocks.' +
      (pending ? ' ' + bytes(pending) + ' pending free (waiting on other streams).' : '') +
      (passed ? ' Memory passed through the cache: ' + bytes(passed) + ' in ' + plural(segs.length - cacheSegs, 'segment') +
        ' of its own kinds, drawn here too.' : '')]));
    sec.appendChild(el('div', {class: 'legend', style: 'margin-bottom:6px'}, [
      el('span', {}, [swatch(PALETTE[0]), 'allocated (coloured by site, as above)']),
      el('span', {}, [el('span', {class: 'swatch', style: 'background:repeating-linear-gradient(135deg,' + PENDING + ' 0 2px,#fff3d6 2px 4px)'}),
        'pending free']),
      el('span', {}, [el('span', {class: 'swatch', style: 'background:' + FREE + ';border:1px solid #c9d0d6'}), 'free']),
      el('span', {class: 'sub', text: 'One row per segment, largest first; a row is the whole segment.' +
        (dev.segments_merged ? ' Neighbouring blocks in the same state are drawn as one (too many blocks to draw each).' : '')})]));

    var scroll = el('div', {class: 'seg-scroll'});
    var canvas = el('canvas', {id: 'segments-' + dev.device});
    var spacer = el('div');
    scroll.appendChild(canvas);
    scroll.appendChild(spacer);
    var viewRows = Math.min(segs.length, 26);
    scroll.style.height = (viewRows * ROW + 2) + 'px';
    sec.appendChild(scroll);

    /* pending frees: amber stripes, unlike any band colour */
    var stripes = null;
    function pendingFill(g) {
      if (!stripes) {
        var tile = document.createElement('canvas');
        tile.width = tile.height = 6;
        var t = tile.getContext('2d');
        t.fillStyle = '#fff3d6'; t.fillRect(0, 0, 6, 6);
        t.strokeStyle = PENDING; t.lineWidth = 2;
        t.beginPath(); t.moveTo(-1, 7); t.lineTo(7, -1); t.stroke();
        stripes = tile;
      }
      return g.createPattern(stripes, 'repeat');
    }

    function colorOf(stack) {
      var si = stack >= 0 ? DATA.stack_sites[stack] : NO_STACK_SITE;
      return bandOf[si] !== undefined ? PALETTE[bandOf[si] % PALETTE.length] : '#7f8c99';
    }

    var width = 0, pending_draw = false;
    function draw() {
      pending_draw = false;
      width = scroll.clientWidth;
      var height = viewRows * ROW;
      spacer.style.height = Math.max(0, segs.length * ROW - height) + 'px';
      var g = fit(canvas, width, height);
      g.clearRect(0, 0, width, height);
      var first = Math.floor(scroll.scrollTop / ROW), off = scroll.scrollTop - first * ROW;
      var barX = LABEL, barW = Math.max(40, width - LABEL - 10);
      g.font = '11.5px ' + getComputedStyle(document.body).getPropertyValue('--mono');
      g.textBaseline = 'middle';
      for (var r = first; r < segs.length && (r - first) * ROW - off < height; r++) {
        var seg = segs[r], y = (r - first) * ROW - off;
        g.fillStyle = r % 2 ? '#fafbfc' : '#fff';
        g.fillRect(0, y, width, ROW);
        g.fillStyle = '#1d2329';
        g.textAlign = 'right';
        g.fillText(bytes(seg.total), 78, y + ROW / 2);
        g.textAlign = 'left';
        g.fillStyle = '#5f6b76';
        g.fillText(seg.pool + '  ' + percent(seg.free, seg.total) + ' free', 88, y + ROW / 2);
        var x = barX, flat = seg.flat;
        for (var j = 0; j < flat.length; j += 5) {
          var w = flat[j] / seg.total * barW, state = flat[j + 2];
          g.fillStyle = state === 0 ? colorOf(flat[j + 3]) : state === 1 ? pendingFill(g) : FREE;
          g.fillRect(x, y + 3, Math.max(w, 0.6), ROW - 6);
          if (w >= 4) { g.fillStyle = '#fff'; g.fillRect(x + w - 0.5, y + 3, 1, ROW - 6); }
          x += w;
        }
      }
    }
    function schedule() {
      if (pending_draw) return;
      pending_draw = true;
      requestAnimationFrame(draw);
    }
    scroll.addEventListener('scroll', function () { hideTip(); schedule(); });
    canvas.addEventListener('mouseleave', hideTip);
    canvas.addEventListener('mousemove', function (e) {
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left, my = e.clientY - rect.top;
      var r = Math.floor((my + scroll.scrollTop) / ROW), seg = segs[r];
      if (!seg) { hideTip(); return; }
      var kids = [el('div', {class: 'row head', text: 'segment ' + seg.addr + ': ' + bytes(seg.total) + ', ' + seg.pool +
        ' pool, stream ' + seg.stream}),
        el('div', {class: 'row', text: bytes(seg.allocated) + ' allocated, ' + bytes(seg.free) + ' free' +
          (seg.pending ? ', ' + bytes(seg.pending) + ' pending' : '') + ' in ' + plural(seg.blocks, 'block')})];
      var barW = Math.max(40, width - LABEL - 10), x = LABEL;
      for (var j = 0; j < seg.flat.length && mx >= LABEL; j += 5) {
        var w = seg.flat[j] / seg.total * barW;
        if (mx < x + w || j + 5 >= seg.flat.length) {
          var f = seg.flat, state = ['allocated', 'pending free', 'free'][f[j + 2]];
          var what = (f[j + 4] > 1 ? plural(f[j + 4], 'block') + ', ' : 'block, ') + bytes(f[j]) + ', ' + state;
          if (f[j + 2] !== 2) what += ' (requested ' + bytes(f[j + 1]) + ')';
          kids.push(el('div', {class: 'row', text: what}));
          if (f[j + 2] !== 2) {
            var si = f[j + 3] >= 0 ? DATA.stack_sites[f[j + 3]] : NO_STACK_SITE;
            if (si >= 0) kids.push(el('div', {class: 'row'}, [el('b', {text: siteName(si)}), ' ' + siteWhere(si)]));
            if (f[j + 3] >= 0) kids.push(el('div', {class: 'stack'}, [stackList(f[j + 3], si, 8)]));
          }
          break;
        }
        x += w;
      }
      showTip(e, kids);
    });
    return {node: sec, draw: draw};
  }

  /* ---------------------------------------------------------------------------------------------
   * Tables
   * ------------------------------------------------------------------------------------------- */

  function factsTable(rows) {
    return el('table', {}, rows.map(function (r) {
      return el('tr', {}, [el('th', {text: r[0], style: 'width:38%'}), el('td', {class: 'mono', text: String(r[1])})]);
    }));
  }

  function liveTable(dev) {
    var trigger = (DATA.facts.filter(function (f) { return f[0] === 'trigger'; })[0] || [])[1];
    var title = trigger === 'exit' ? 'Blocks never freed (at exit)' : 'Still allocated at the snapshot';
    var box = el('div', {id: 'leaks'}, [el('h3', {text: title + ': ' + bytes(dev.live.bytes) + ' in ' + plural(dev.live.blocks, 'block')})]);
    if (!dev.live_sites.length) {
      box.appendChild(el('p', {class: 'note', text: 'None: every block had been freed.'}));
      return box;
    }
    var rows = [el('tr', {}, [el('th', {class: 'num', text: 'bytes', style: 'width:90px'}),
      el('th', {class: 'num', text: 'blocks', style: 'width:64px'}), el('th', {text: 'site'})])];
    dev.live_sites.slice(0, 50).forEach(function (r) {
      var si = r[0];
      var tr = el('tr', {class: 'hover'}, [el('td', {class: 'num', text: bytes(r[1])}), el('td', {class: 'num', text: count(r[2])}),
        el('td', {class: 'site', text: siteFull(si)})]);
      tr.addEventListener('mousemove', function (e) {
        showTip(e, [el('div', {class: 'row head', text: siteFull(si)}), el('div', {class: 'stack'}, [stackList(site(si).stack, si, 12)])]);
      });
      tr.addEventListener('mouseleave', hideTip);
      rows.push(tr);
    });
    var more = dev.live_sites.length - 50 + dev.live_sites_more[0];
    if (more > 0) rows.push(el('tr', {}, [el('td', {class: 'num'}), el('td', {class: 'num'}), el('td', {class: 'note', text: count(more) + ' more sites'})]));
    box.appendChild(el('table', {}, rows));
    return box;
  }

  function reconcileTable(dev) {
    var box = el('div', {id: 'reconcile'}, [el('h3', {text: 'Reconciliation: the allocator\u2019s counters against its segments'})]);
    if (!dev.reconcile.length) {
      box.appendChild(el('p', {class: 'note', text: 'This snapshot carries no allocator statistics (PyTorch\u2019s own ' +
        'snapshots have none): there is nothing to reconcile.'}));
      return box;
    }
    var rows = [el('tr', {}, [el('th', {text: 'what', style: 'width:24%'}), el('th', {class: 'num', text: 'statistics', style: 'width:19%'}),
      el('th', {class: 'num', text: 'segments / trace', style: 'width:19%'}), el('th', {text: '', style: 'width:9%'}),
      el('th', {text: 'counted as'})])];
    dev.reconcile.forEach(function (r) {
      var isBytes = /bytes/.test(r[0]), fmt = isBytes ? exact : count, same = r[1] === r[2];
      rows.push(el('tr', {}, [el('td', {text: r[0]}), el('td', {class: 'num', text: fmt(r[1])}), el('td', {class: 'num', text: fmt(r[2])}),
        el('td', {class: same ? 'ok' : 'bad', text: same ? '\u2713' : '\u2717 ' + (isBytes ? bytes(Math.abs(r[1] - r[2])) : count(Math.abs(r[1] - r[2]))) }),
        el('td', {class: 'note', text: r[3]})]));
    });
    box.appendChild(el('table', {}, rows));
    return box;
  }

  function tablesSection(dev) {
    var sec = el('section', {id: 'tables'}, [el('h2', {text: 'Tables'})]);
    var left = el('div', {}, [el('h3', {text: 'memory_summary (device ' + dev.device + ')'}),
      el('p', {class: 'note', id: 'table-bytes', text: 'Block bytes, as torch.cuda.memory_allocated() and memory_reserved() count ' +
        'them (sizes rounded up by the allocator); the peak at the top of the page and the sites count requested bytes.'}),
      el('pre', {class: 'summary', text: dev.table})]);
    if (dev.table_note) left.appendChild(el('p', {class: 'note', text: dev.table_note}));
    if (dev.driver_table) {
      left.appendChild(el('h3', {text: 'Device memory, reconciled with the driver'}));
      left.appendChild(el('pre', {class: 'summary', id: 'driver', text: dev.driver_table}));
    }
    var right = el('div', {}, [liveTable(dev), reconcileTable(dev)]);
    var facts = el('div', {id: 'facts'}, [el('h3', {text: 'The snapshot'}), factsTable(DATA.facts.concat([
      ['trace entries (device ' + dev.device + ')', count(dev.events)]]))]);
    var settings = el('div', {}, [el('h3', {text: 'Allocator settings'}),
      DATA.settings.length ? factsTable(DATA.settings) : el('p', {class: 'note', text: 'None in this snapshot.'})]);
    sec.appendChild(el('div', {class: 'tables'}, [left, right, facts, settings]));
    return {node: sec};
  }

  /* ---------------------------------------------------------------------------------------------
   * The answer first
   * ------------------------------------------------------------------------------------------- */

  function card(cls, label, big, small, bigClass) {
    return el('div', {class: 'card ' + cls}, [el('div', {class: 'label', text: label}),
      el('div', {class: 'big' + (bigClass ? ' ' + bigClass : ''), text: big}), el('div', {class: 'small', text: small})]);
  }

  /* Warnings about the figures themselves (a recovery that lost its oldest events), above all. */
  function bannerNode() {
    if (!DATA.warnings || !DATA.warnings.length) return null;
    return el('div', {class: 'banner', id: 'warning-banner'}, DATA.warnings.map(function (w) { return el('p', {text: w}); }));
  }

  /* The out-of-memory answer, in summary's words: what was asked, by whom, and why it failed. */
  function oomNode() {
    if (!DATA.oom) return null;
    var lines = DATA.oom.lines;
    var head = lines[0].replace(/^out of memory on /, '');
    return el('div', {class: 'oom-answer', id: 'oom-answer'}, [el('div', {class: 'label', text: 'Out of memory'}),
      el('div', {class: 'headline', text: head}),
      el('pre', {class: 'lines', text: lines.slice(1).map(function (l) { return l.replace(/^  /, ''); }).join('\n')})]);
  }

  function answer(dev) {
    var when = dev.events ? 'after entry ' + count(dev.peak.after) + ' of ' + count(dev.events) +
      (dev.peak.time_us >= 0 ? ', ' + clock(dev.peak.time_us) : '') : 'the snapshot holds no trace: at the snapshot';
    var peak = card('peak', dev.events ? 'Peak requested bytes' : 'Requested bytes', bytes(dev.peak.bytes), exact(dev.peak.bytes) +
      ' \u00b7 ' + when + ' \u00b7 what the program asked for, before rounding (memory_allocated() counts the rounded blocks: ' +
      'the memory_summary table below)');
    peak.id = 'peak-value';
    var topCard;
    if (dev.peak_sites.length) {
      var t = dev.peak_sites[0], si = t[0];
      var where = siteWhere(si);
      topCard = card('top', dev.events ? 'Top site at the peak' : 'Top site', siteName(si), (where ? where + ' \u00b7 ' : '') +
        bytes(t[1]) + ', ' + percent(t[1], dev.peak.bytes) + (dev.events ? ' of the peak, ' : ' of it, ') + plural(t[2], 'block'), 'name');
      topCard.title = siteFull(si);
      topCard.id = 'top-site';
    } else {
      topCard = card('top', 'Top site at the peak', 'none', 'nothing was allocated');
    }
    /* reserved: the cache's segments; a segment of memory passed through names its kind (s[5]) */
    var segCount = 0, reservedNow = 0;
    dev.segments.forEach(function (s) { if (!s[5]) { reservedNow += s[1]; segCount++; } });
    var reserved = card('reserved', dev.events ? 'Reserved, at most' : 'Reserved', bytes(Math.max(dev.reserved_peak.bytes, reservedNow)),
      bytes(reservedNow) + ' at the snapshot in ' + plural(segCount, 'segment'));
    var inside = dev.inside.rounding + dev.inside.gaps;
    var now = card('now', 'At the snapshot', bytes(dev.live.bytes) + ' requested', plural(dev.live.blocks, 'block') +
      ' still allocated \u00b7 ' + bytes(inside) + ' free inside segments');
    return el('div', {class: 'answer'}, [peak, topCard, reserved, now]);
  }

  /* ---------------------------------------------------------------------------------------------
   * The page
   * ------------------------------------------------------------------------------------------- */

  var app = document.getElementById('app');
  var drawers = [];

  function headerNode() {
    var back = JOB ? el('button', {class: 'back', id: 'back-to-job', text: '\u2190 all ' + JOB.job.ranks.length + ' processes',
      onclick: renderJob}) : null;
    var facts = {};
    DATA.facts.forEach(function (f) { facts[f[0]] = f[1]; });
    var bits = [DATA.writer + ' snapshot'];
    if (facts.trigger) bits.push('trigger ' + facts.trigger);
    if (facts.pid) bits.push('pid ' + facts.pid);
    if (facts.time) bits.push(facts.time);
    return el('header', {}, [back, el('h1', {text: 'cudasnap report'}), el('span', {class: 'file', text: DATA.path}),
      el('span', {class: 'sub', text: bits.join(' \u00b7 ')})]);
  }

  function renderDevice(index) {
    hideTip();
    var dev = DATA.devices[index];
    var parts = [headerNode()];
    if (DATA.devices.length > 1) {
      parts.push(el('div', {class: 'tabs'}, DATA.devices.map(function (d, i) {
        return el('button', {class: i === index ? 'on' : '', text: 'device ' + d.device + ' \u00b7 peak ' + bytes(d.peak.bytes),
          onclick: function () { renderDevice(i); }});
      })));
    }
    var banner = bannerNode(), oom = oomNode();
    if (banner) parts.push(banner);
    if (oom) parts.push(oom);
    parts.push(answer(dev));
    var sections = [timelineSection(dev), peakSection(dev), segmentSection(dev), tablesSection(dev)];
    sections.forEach(function (s) { parts.push(s.node); });
    parts.push(el('footer', {text: 'Written by cudasnap report from ' + DATA.title + '. Self-contained: this page loads nothing ' +
      'from anywhere. Sites: the first frame outside CUDA\u2019s libraries and cudasnap, as in cudasnap summary.'}));
    app.replaceChildren.apply(app, parts);
    drawers = sections.filter(function (s) { return s.draw; }).map(function (s) { return s.draw; });
    drawers.forEach(function (d) { d(); });
  }

  function renderEmpty() {
    app.replaceChildren(headerNode(), el('p', {class: 'empty', text: 'This snapshot shows no memory use on any device: no segment, ' +
      'no trace entry and no statistics other than zero.'}), el('div', {class: 'tables'}, [
      el('div', {}, [el('h3', {text: 'The snapshot'}), factsTable(DATA.facts)])]));
  }

  /* ---------------------------------------------------------------------------------------------
   * The job page (cli/report_job.h): the ranks table, every process's allocated bytes on one
   * wall-clock axis, and each one's own report (the page above, from DATA.details) a click away.
   * ------------------------------------------------------------------------------------------- */

  var JOB = DATA.job ? DATA : null;
  function openDetail(i) {
    hideTip();
    DATA = JOB.details[i];
    NO_STACK_SITE = noStackSite();
    if (DATA.devices.length) renderDevice(0); else renderEmpty();
    window.scrollTo(0, 0);
  }

  function rankText(r) { return r.rank === null ? '?' : String(r.rank); }

  /* One process's curve, x over the job's time span and y over the highest peak: the processes
   * compare at a glance, and the same moment is at the same place in every row. Markup made of
   * numbers only, parsed by the HTML parser (which puts <svg> in its namespace). */
  function curveNode(r, job) {
    var w = 1000, h = 44, span = Math.max(1, job.t1 - job.t0), ymax = Math.max(1, job.ymax);
    var pts = r.curve.map(function (p) {
      return ((p[0] - job.t0) / span * w).toFixed(1) + ',' + (h - p[1] / ymax * (h - 2)).toFixed(1);
    });
    var shapes = '';
    if (pts.length) {
      var first = pts[0].split(',')[0], last = pts[pts.length - 1].split(',')[0];
      shapes = '<polygon points="' + first + ',' + h + ' ' + pts.join(' ') + ' ' + last + ',' + h + '" fill="' +
        (r.oom ? '#f4b6b6' : '#b9cde2') + '"></polygon><polyline points="' + pts.join(' ') + '" fill="none" stroke="' +
        (r.oom ? OOM : PALETTE[0]) + '" stroke-width="1.2" vector-effect="non-scaling-stroke"></polyline>';
    }
    var box = el('div', {class: 'curve-box'});
    box.innerHTML = '<svg class="curve" viewBox="0 0 ' + w + ' ' + h + '" preserveAspectRatio="none">' + shapes + '</svg>';
    return box;
  }

  function renderJob() {
    hideTip();
    DATA = JOB;
    var job = JOB.job, rows = job.ranks;
    var head = el('header', {}, [el('h1', {text: 'cudasnap report'}), el('span', {class: 'file', text: JOB.title}),
      el('span', {class: 'sub', text: 'the processes of a job, highest peak first; a row opens its own report'})]);
    /* allocated and reserved: the cache's; memory passed through, its own column (docs/report.md) */
    var cols = ['Rank', 'Host', 'PID', 'Trigger', 'Peak allocated', 'Peak reserved', 'Passed through', 'Phase at the peak', 'OOM',
      'Top site at the peak'];
    var peakOf = function (r) { return r.peak_allocated + (r.peak_passthrough || 0); };
    var table = el('table', {class: 'job-table', id: 'job-ranks'}, [el('thead', {}, [el('tr', {}, cols.map(function (c) {
      return el('th', {text: c});
    }))]), el('tbody', {}, rows.map(function (r, i) {
      return el('tr', {class: 'job-row' + (r.oom ? ' oom' : ''), 'data-rank': rankText(r), onclick: function () { openDetail(i); }}, [
        el('td', {text: rankText(r)}), el('td', {text: r.host || '?'}), el('td', {text: r.pid === null ? '?' : String(r.pid)}),
        el('td', {text: r.trigger || '?'}), el('td', {class: 'num', text: bytes(r.peak_allocated), title: exact(r.peak_allocated)}),
        el('td', {class: 'num', text: bytes(r.peak_reserved), title: exact(r.peak_reserved)}),
        el('td', {class: 'num', text: bytes(r.peak_passthrough || 0), title: exact(r.peak_passthrough || 0)}), el('td', {text: r.phase || '-'}),
        el('td', {class: r.oom ? 'oom-mark' : '', text: r.oom ? (r.oom_bytes ? 'OOM: ' + bytes(r.oom_bytes) : 'OOM') : 'no',
          title: r.oom_bytes ? 'the last OOM tried to allocate ' + exact(r.oom_bytes) : ''}),
        el('td', {class: 'site', text: r.top_site || '-', title: r.top_site || ''})]);
    }))]);
    var parts = [head, el('section', {}, [el('h2', {text: 'Ranks'}), table])];
    if (rows.length > 1) {
      var med = rows[Math.floor(rows.length / 2)];
      parts.push(el('p', {class: 'spread', id: 'job-spread', text: 'spread: highest / median peak = ' +
        (peakOf(med) ? (peakOf(rows[0]) / peakOf(med)).toFixed(2) + 'x' : '-') + ' (rank ' + rankText(rows[0]) + ' ' +
        bytes(peakOf(rows[0])) + ' / rank ' + rankText(med) + ' ' + bytes(peakOf(med)) + ')'}));
    }
    var axis = job.t0 === null ? 'no times in these snapshots' : clock(job.t0) + ' \u2192 ' + clock(job.t1) + ' (' + seconds(job.t1 - job.t0) +
      '), live bytes (allocated and passed through), 0 to ' + bytes(job.ymax);
    parts.push(el('section', {}, [el('h2', {text: 'Memory over time'}), el('p', {class: 'sub', text: axis}),
      el('div', {class: 'multiples', id: 'job-multiples'}, rows.map(function (r, i) {
        return el('div', {class: 'multiple', onclick: function () { openDetail(i); }}, [
          el('div', {class: 'multiple-label', text: 'rank ' + rankText(r) + ' \u00b7 ' + bytes(peakOf(r)) + (r.oom ? ' \u00b7 OOM' : '')}),
          curveNode(r, job)]);
      }))]));
    parts.push(el('footer', {text: 'Written by cudasnap report from ' + rows.length + ' snapshots. Self-contained: this page loads ' +
      'nothing from anywhere.'}));
    app.replaceChildren.apply(app, parts);
    drawers = [];
    window.scrollTo(0, 0);
  }

  if (JOB) renderJob(); else if (DATA.devices.length) renderDevice(0); else renderEmpty();
  document.title = (JOB || DATA).title + ' - cudasnap report';

  var resizeQueued = false;
  window.addEventListener('resize', function () {
    if (resizeQueued) return;
    resizeQueued = true;
    requestAnimationFrame(function () { resizeQueued = false; drawers.forEach(function (d) { d(); }); });
  });
  /* When the first frame is on screen: for tests and measurements (milliseconds since navigation). */
  requestAnimationFrame(function () {
    document.documentElement.setAttribute('data-rendered-ms', performance.now().toFixed(0));
  });
})();
