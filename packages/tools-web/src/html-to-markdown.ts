// Turning a fetched HTML page into clean markdown: drop what is never content (scripts,
// styles, cookie and consent banners, navigation, sidebars, footers), let Readability pick the
// main content from a linkedom DOM, then convert it with turndown.
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

type DomDocument = ReturnType<typeof parseHTML>['document'];

export interface ExtractedPage {
  title: string;
  markdown: string;
}

// Never text a reader wants: removed outright. Form controls go, the forms around them are
// judged below (ASP.NET WebForms pages wrap the whole body in one <form>).
const NEVER_CONTENT = [
  'script',
  'style',
  'noscript',
  'template',
  'iframe',
  'object',
  'embed',
  'svg',
  'canvas',
  'link',
  'meta',
  'button',
  'input',
  'select',
  'textarea',
].join(',');

// Page furniture: removed unless it holds most of the page's text.
const FURNITURE = [
  'dialog',
  'nav',
  'aside',
  'footer',
  '[hidden]',
  '[aria-hidden="true"]',
  '[role="navigation"]',
  '[role="complementary"]',
  '[role="contentinfo"]',
  '[role="dialog"]',
  '[role="alertdialog"]',
  '[role="search"]',
].join(',');

// A form with less text than this (once its controls are gone) is a search box, a login or a
// newsletter sign-up, not content.
const SMALL_FORM_CHARS = 500;

// id/class words that mark banners, consent prompts, share bars and ads, as a whole class name
// or one of its hyphen/underscore parts (`cookie-banner`, `share_bar`, `docs-sidebar`).
const BOILERPLATE_WORDS =
  /(^|[-_])(cookie|cookies|consent|gdpr|onetrust|cmp|banner|newsletter|subscribe|share|social|advert|ads|promo|popup|modal|breadcrumbs?|sidebar|toc|table-of-contents|skip-link)([-_]|$)/i;

// Class names that describe the page's state or layout rather than a component: `has-sidebar`,
// `with-toc`, `no-ads`, `page--with-toc`, `share-enabled`, `sidebar-layout` sit on wrappers
// around the whole content.
const STATE_CLASS =
  /((^|--)(has|with|without|no|is|show|hide|enable|allow)[-_])|([-_](enabled|disabled|active|open|visible|hidden|layout|template|on|off)$)/i;

function isBoilerplateMarker(marker: string): boolean {
  return marker
    .split(/\s+/)
    .some((name) => name !== '' && BOILERPLATE_WORDS.test(name) && !STATE_CLASS.test(name));
}

function textLength(element: { textContent: string | null }): number {
  return (element.textContent ?? '').replace(/\s+/g, '').length;
}

function removeBoilerplate(document: DomDocument): void {
  for (const element of [...document.querySelectorAll(NEVER_CONTENT)]) element.remove();
  // Whatever a rule below matches, an element holding most of the page's text is the page
  // (a wrapper with an unlucky class, a body-wide <form>) and stays; Readability takes it from there.
  const pageText = textLength(document.body ?? document.documentElement);
  const holdsMostText = (element: { textContent: string | null }) => textLength(element) * 2 > pageText;
  for (const element of [...document.querySelectorAll('form')]) {
    if (textLength(element) < SMALL_FORM_CHARS && !holdsMostText(element)) element.remove();
  }
  for (const element of [...document.querySelectorAll(FURNITURE)]) {
    if (element.isConnected && !holdsMostText(element)) element.remove();
  }
  for (const element of [...document.querySelectorAll('[id],[class]')]) {
    if (!element.isConnected) continue;
    const tag = element.tagName.toLowerCase();
    if (tag === 'body' || tag === 'html' || tag === 'main' || tag === 'article') continue;
    const marker = `${element.getAttribute('id') ?? ''} ${element.getAttribute('class') ?? ''}`;
    if (isBoilerplateMarker(marker) && !holdsMostText(element)) element.remove();
  }
}

function absolutize(document: DomDocument, baseUrl: string): void {
  for (const [selector, attribute] of [
    ['a[href]', 'href'],
    ['img[src]', 'src'],
  ] as const) {
    for (const element of [...document.querySelectorAll(selector)]) {
      const value = element.getAttribute(attribute);
      if (!value) continue;
      if (attribute === 'src' && value.startsWith('data:')) {
        element.remove(); // base64 images are noise to a model (hermes strips them too)
        continue;
      }
      if (/^(javascript|vbscript):/i.test(value.trim())) {
        element.removeAttribute(attribute);
        continue;
      }
      try {
        element.setAttribute(attribute, new URL(value, baseUrl).href);
      } catch {
        // leave malformed URLs as they are
      }
    }
  }
}

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '_',
  });
  service.addRule('fencedCodeWithLanguage', {
    filter: (node) => node.nodeName === 'PRE' && node.firstChild?.nodeName === 'CODE',
    replacement: (_content, node) => {
      const code = node.firstChild as unknown as {
        getAttribute(name: string): string | null;
        textContent: string | null;
      };
      const language = /language-(\S+)/.exec(code.getAttribute('class') ?? '')?.[1] ?? '';
      const text = (code.textContent ?? '').replace(/\n$/, '');
      return `\n\n\`\`\`${language}\n${text}\n\`\`\`\n\n`;
    },
  });
  service.addRule('pipeTable', {
    filter: 'table',
    replacement: (_content, node) => {
      type Cell = { textContent: string | null };
      type Row = { querySelectorAll(selector: string): ArrayLike<Cell> };
      const table = node as unknown as { querySelectorAll(selector: string): ArrayLike<Row> };
      const rows = Array.from(table.querySelectorAll('tr')).map((row) =>
        Array.from(row.querySelectorAll('th,td')).map((cell) =>
          (cell.textContent ?? '').replace(/\s+/g, ' ').trim().replaceAll('|', '\\|'),
        ),
      );
      if (rows.length === 0) return '';
      const width = Math.max(...rows.map((row) => row.length));
      const line = (row: string[]) =>
        `| ${Array.from({ length: width }, (_, index) => row[index] ?? '').join(' | ')} |`;
      const [head, ...body] = rows;
      return `\n\n${[line(head!), line(Array(width).fill('---')), ...body.map(line)].join('\n')}\n\n`;
    },
  });
  return service;
}

function tidy(markdown: string): string {
  return markdown
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Main content of an HTML page as markdown, with its title. */
export function htmlToMarkdown(html: string, pageUrl: string): ExtractedPage {
  const { document } = parseHTML(html);
  const pageTitle = (document.querySelector('title')?.textContent ?? '').replace(/\s+/g, ' ').trim();
  // The page's own <h1> is the best title when the <title> contains it ("Headline | Site").
  const heading = (document.querySelector('h1')?.textContent ?? '').replace(/\s+/g, ' ').trim();
  const headingTitle = heading && pageTitle.includes(heading) ? heading : undefined;
  removeBoilerplate(document);
  absolutize(document, pageUrl);
  const fallbackRoot =
    document.querySelector('main') ??
    document.querySelector('article') ??
    document.querySelector('[role="main"]') ??
    document.body;
  const fallbackHtml = fallbackRoot?.innerHTML ?? '';
  let contentHtml = fallbackHtml;
  let title = headingTitle ?? pageTitle;
  try {
    const article = new Readability(document as never, { charThreshold: 200, keepClasses: true }).parse();
    if (article?.content && (article.textContent ?? '').trim().length >= 200) {
      contentHtml = article.content;
      title = headingTitle ?? (article.title?.trim() || pageTitle);
    }
  } catch {
    // Readability gives up on odd markup; the cleaned <main>/<body> is still usable.
  }
  return { title, markdown: tidy(createTurndown().turndown(contentHtml)) };
}
