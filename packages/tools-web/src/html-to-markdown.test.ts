import { describe, expect, it } from 'vitest';
import { htmlToMarkdown } from './html-to-markdown.js';

const paragraphs = [
  'Tidal turbines in the Pentland Firth produced 12 gigawatt-hours last year, enough for about 3,000 homes, and the operator now plans to add four more machines on the same seabed foundations.',
  'Engineers say the main lesson of the first six years is that blade coatings, not gearboxes, decide how often a turbine has to be lifted out of the water for maintenance.',
];
const article = `<h1>Tidal power comes of age</h1>${paragraphs.map((text) => `<p>${text}</p>`).join('')}`;
const page = (body: string) =>
  `<!DOCTYPE html><html><head><title>Tidal power comes of age</title></head><body>${body}</body></html>`;

describe('htmlToMarkdown', () => {
  it.each([
    'has-sidebar',
    'with-toc',
    'share-enabled',
    'layout no-ads',
    'page--with-sidebar',
    'sidebar-layout',
    'cookie-consent-given',
  ])('keeps the content of a wrapper classed "%s"', (className) => {
    const { markdown } = htmlToMarkdown(
      page(
        `<div class="${className}"><div class="post">${article}</div><div class="sidebar">Trending now</div></div>`,
      ),
      'https://news.example/tidal',
    );
    for (const text of paragraphs) expect(markdown).toContain(text);
    expect(markdown).not.toContain('Trending now');
  });

  it('keeps an element with a boilerplate class when it holds most of the page', () => {
    const { markdown } = htmlToMarkdown(
      page(`<div id="main-sidebar-content">${article}</div><div class="share-bar">Share on X</div>`),
      'https://news.example/tidal',
    );
    for (const text of paragraphs) expect(markdown).toContain(text);
    expect(markdown).not.toContain('Share on X');
  });

  it('keeps a form that wraps the page but drops its controls and small forms', () => {
    const { markdown } = htmlToMarkdown(
      page(
        `<form class="login"><label>Email address</label><input name="email"></form>` +
          `<form id="aspnetForm" method="post"><input type="hidden" name="__VIEWSTATE" value="dDwtMTA4">` +
          `<div class="story">${article}</div><select><option>Choose a region</option></select></form>`,
      ),
      'https://news.example/tidal',
    );
    for (const text of paragraphs) expect(markdown).toContain(text);
    for (const noise of ['__VIEWSTATE', 'dDwtMTA4', 'Email address', 'Choose a region'])
      expect(markdown, noise).not.toContain(noise);
  });
});
