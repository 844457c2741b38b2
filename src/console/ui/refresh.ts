// Re-rendering the page a view is on, after an action it offered: its lists are read again (a row the
// action settled leaves, a row it changed shows the change), then the action's message is shown in
// the new page's status line (the element marked `data-page-status`).
let rerender: (() => Promise<void>) | undefined;

/** Set once by the console's entry: how to render the current page afresh. */
export function onRefresh(fn: () => Promise<void>): void {
  rerender = fn;
}

/** Renders the current page again, then puts `notice` in its status line. */
export async function refreshPage(notice: string): Promise<void> {
  await rerender?.();
  const status = document.querySelector<HTMLElement>('main [data-page-status]');
  if (status) status.textContent = notice;
}
