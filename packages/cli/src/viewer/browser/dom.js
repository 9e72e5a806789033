// @ts-check
// DOM helpers shared by the viewer page's scripts (dashboard.js, viewer.js); inlined before them.
(() => {
  /**
   * @param {string} tag
   * @param {Record<string, any> | null} [attrs]
   * @param {Array<Node | string | null | undefined | false>} [children]
   * @returns {HTMLElement}
   */
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const key in attrs) {
        if (attrs[key] === undefined || attrs[key] === null) continue;
        if (key === 'text') node.textContent = attrs[key];
        else if (key === 'class') node.className = attrs[key];
        else if (key.indexOf('on') === 0) node.addEventListener(key.slice(2), attrs[key]);
        else node.setAttribute(key, attrs[key]);
      }
    }
    (children || []).forEach((child) => {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }
  /** @param {any} value @param {number} [digits] */
  function fmt(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return '\u2013';
    return Number(value).toFixed(digits === undefined ? 2 : digits);
  }
  window.shearsDom = { el, fmt };
})();
