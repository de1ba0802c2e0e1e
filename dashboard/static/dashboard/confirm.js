// Confirmation before destructive writes: a form (or the button that submits it) carrying
// data-confirm="question" is only sent once the user has agreed to that question.
(function () {
  "use strict";
  document.addEventListener("submit", (event) => {
    const button = event.submitter;
    const question = (button && button.dataset.confirm) || event.target.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);
})();
