"""A short text (an id) in a monospace box with a Copy button: a small custom component.

The Trace page's header showed its trace id with `st.code` for that button, and `st.code` is the
only element on the page that loads Streamlit's syntax highlighter (a 1.5 MB script the browser
fetches, parses and runs on every full page load: on a busy 2-core machine, 0.3-0.9 s of the
browser's CPU on a 10,000-span trace's first visit). This component needs only what the tree's
component already loads. The text is set as text (never as HTML), and a click on Copy never
reaches the server.
"""

from __future__ import annotations

import streamlit as st

_CSS = """
.copy { display: flex; align-items: center; gap: 0.5rem; padding: 0.35rem 0.6rem;
        border-radius: 0.5rem; background: var(--st-secondary-background-color, #f0f2f6); }
code { flex: 1; font-family: var(--st-code-font, "Source Code Pro", monospace); font-size: 0.875rem;
       overflow-wrap: anywhere; background: none; }
button { font: inherit; font-size: 0.8rem; cursor: pointer; padding: 0.15rem 0.6rem; border-radius: 0.4rem;
         border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); background: transparent;
         color: inherit; }
"""

_JS = """
export default function (component) {
  const { data, parentElement } = component;
  let box = parentElement.querySelector('.copy');
  if (!box) {
    box = document.createElement('div');
    box.className = 'copy';
    box.append(document.createElement('code'), document.createElement('button'));
    parentElement.appendChild(box);
  }
  const [code, button] = box.children;
  code.textContent = data.text;
  button.type = 'button';
  button.textContent = 'Copy';
  button.setAttribute('aria-label', data.label);
  const selectText = () => {  // without the clipboard API (a page served over plain http)
    const range = document.createRange();
    range.selectNodeContents(code);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand('copy');
  };
  button.onclick = async () => {
    let copied = false;
    try {
      if (navigator.clipboard) { await navigator.clipboard.writeText(data.text); copied = true; }
    } catch (error) { copied = false; }
    if (!copied) copied = selectText();
    button.textContent = copied ? 'Copied' : 'Press Ctrl+C';
  };
}
"""

_COPY = st.components.v2.component("janux_copy_text", css=_CSS, js=_JS)


def copy_text(text: str, *, label: str, key: str) -> None:
    """Show `text` with a Copy button (`label` names the button for screen readers and tests)."""
    _COPY(key=key, data={"text": text, "label": label})
