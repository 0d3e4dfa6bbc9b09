// The run page's repair forms that ask first (data-confirm): a file, not an inline handler, as
// the site's Content-Security-Policy refuses inline script.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
