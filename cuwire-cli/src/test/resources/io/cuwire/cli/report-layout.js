// Checks the demo report after layout: run in the page by ReportBrowserTest through Runtime.evaluate.
// Returns JSON: the counts of what it checked and every problem found, each naming the element and the boxes.
(() => {
  const TOL = 0.5;
  const problems = [];
  const box = (r) => `[${r.left.toFixed(1)}, ${r.top.toFixed(1)}, ${r.right.toFixed(1)}, ${r.bottom.toFixed(1)}]`;
  const inside = (r, outer) => r.left >= outer.left - TOL && r.right <= outer.right + TOL
      && r.top >= outer.top - TOL && r.bottom <= outer.bottom + TOL;
  const name = (el) => {
    const cls = el.getAttribute('class');
    const text = (el.textContent || '').trim().slice(0, 40);
    return el.tagName.toLowerCase() + (cls ? '.' + cls : '') + (text ? ` "${text}"` : '');
  };
  const pageWidth = document.documentElement.clientWidth;

  const tables = [...document.querySelectorAll('table')];
  let cells = 0;
  tables.forEach((t, i) => {
    const tb = t.getBoundingClientRect();
    const where = `table ${i + 1} (after "${(t.previousElementSibling || {}).textContent || ''}")`;
    if (tb.width <= 0 || tb.height <= 0) problems.push(`${where} is not drawn: ${box(tb)}`);
    if (tb.left < -TOL || tb.right > pageWidth + TOL) problems.push(`${where} ${box(tb)} runs off the page (width ${pageWidth})`);
    const rows = [...t.rows];
    const width = rows.length ? rows[0].cells.length : 0;
    rows.forEach((row, r) => {
      if (row.cells.length !== width) problems.push(`${where} row ${r + 1} has ${row.cells.length} cells (expected: ${width}, as the header)`);
      [...row.cells].forEach((cell) => {
        cells++;
        const cb = cell.getBoundingClientRect();
        if (cb.width <= 0 || cb.height <= 0) problems.push(`${where}: ${name(cell)} is not drawn: ${box(cb)}`);
        if (!inside(cb, tb)) problems.push(`${where}: ${name(cell)} ${box(cb)} lies outside the table ${box(tb)}`);
        if (cell.scrollWidth > cell.clientWidth + 1) problems.push(`${where}: ${name(cell)} overflows its cell (${cell.scrollWidth} > ${cell.clientWidth} px)`);
      });
    });
  });

  const svgs = [...document.querySelectorAll('svg')];
  svgs.forEach((svg, i) => {
    const sb = svg.getBoundingClientRect();
    const where = `svg ${i + 1} (${name(svg.querySelector('text') || svg)})`;
    if (sb.width <= 0 || sb.height <= 0) problems.push(`${where} is not drawn: ${box(sb)}`);
    if (sb.right > pageWidth + TOL) problems.push(`${where} ${box(sb)} runs off the page (width ${pageWidth})`);
    svg.querySelectorAll('rect, text, circle, polyline, line').forEach((el) => {
      const r = el.getBoundingClientRect();
      if (!inside(r, sb)) problems.push(`${where}: ${name(el)} ${box(r)} lies outside the svg ${box(sb)}`);
    });
    const texts = [...svg.querySelectorAll('text')].map((t) => [t, t.getBoundingClientRect()]);
    texts.forEach(([a, ra], j) => texts.slice(j + 1).forEach(([b, rb]) => {
      const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (w > 1 && h > 1) problems.push(`${where}: ${name(a)} ${box(ra)} and ${name(b)} ${box(rb)} overlap`);
    }));
  });

  let series = 0;
  let points = 0;
  document.querySelectorAll('svg.sweep').forEach((plot, i) => {
    const area = plot.querySelector('.plot-area');
    if (!area) { problems.push(`sweep plot ${i + 1} has no plot area`); return; }
    const ab = area.getBoundingClientRect();
    plot.querySelectorAll('.series').forEach((s) => {
      series++;
      const label = s.getAttribute('data-series');
      const marks = [...s.querySelectorAll('circle')];
      if (marks.length === 0) problems.push(`sweep series ${label} has no points`);
      marks.forEach((m) => {
        points++;
        const r = m.getBoundingClientRect();
        if (r.width <= 0) problems.push(`sweep series ${label}: a point is not drawn`);
        if (!inside(r, ab)) problems.push(`sweep series ${label}: point ${m.textContent} ${box(r)} lies outside the axes ${box(ab)}`);
      });
      s.querySelectorAll('polyline').forEach((l) => {
        const r = l.getBoundingClientRect();
        if (!inside(r, ab)) problems.push(`sweep series ${label}: its line ${box(r)} leaves the axes ${box(ab)}`);
      });
    });
  });
  return JSON.stringify({tables: tables.length, cells, svgs: svgs.length, series, points, problems});
})()
