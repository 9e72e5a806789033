// The viewer page's browser code and styles, read from asset files at build time: `browser/*.js`
// are real scripts that biome lints and `tsc -p tsconfig.browser.json` type-checks (checkJs), and
// uPlot (the charting library, docs/decisions/dashboard-charts.md) comes from its
// package. The build copies `src/viewer/browser` to `dist/viewer/browser`, so the published
// package reads them from either place.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

interface ViewerAssets {
  /** The scripts, in page order: uPlot, the dashboard, the trajectory view. */
  scripts: string[];
  styles: string[];
}

let cached: ViewerAssets | undefined;

function asset(name: string): string {
  const url = new URL(`./browser/${name}`, import.meta.url);
  try {
    return readFileSync(url, 'utf8');
  } catch (error) {
    throw new Error(
      `The viewer asset ${fileURLToPath(url)} is missing (a build that did not copy src/viewer/browser?)`,
      { cause: error },
    );
  }
}

/** `</script>` inside an inlined script would end it early; `<\/` means the same to JavaScript. */
function inlineSafe(code: string): string {
  return code.replace(/<\/(script)/gi, '<\\/$1');
}

export function viewerAssets(): ViewerAssets {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const uplot = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
  const uplotCss = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8');
  cached = {
    scripts: [uplot, asset('dom.js'), asset('dashboard.js'), asset('viewer.js')].map(inlineSafe),
    styles: [uplotCss, asset('viewer.css')],
  };
  return cached;
}
