// Globals of the viewer page's scripts (type-checked by tsconfig.browser.json, not shipped).
import type uPlot from 'uplot';

declare global {
  interface Window {
    /** uPlot's IIFE build, inlined before the page's own scripts. */
    uPlot: typeof uPlot;
    /** Set by dom.js (inlined first); dashboard.js and viewer.js use it. */
    shearsDom: {
      el: (
        tag: string,
        attrs?: Record<string, any> | null,
        children?: Array<Node | string | null | undefined | false>,
      ) => HTMLElement;
      fmt: (value: any, digits?: number) => string;
    };
    /** Set by dashboard.js; viewer.js calls it. */
    shearsDashboard: (options: {
      container: HTMLElement;
      metrics: any[];
      groups: any[];
      onOpen: (selection: { label: string; groupIds: string[]; outcome?: string; task?: string }) => void;
    }) => { resize: () => void; update: (metrics: any[], groups: any[]) => void };
  }
}
