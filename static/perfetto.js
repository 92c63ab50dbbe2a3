// "Open in Perfetto UI": hands the trace's original bytes to ui.perfetto.dev with the
// postMessage protocol Perfetto documents for opening a trace from another origin
// ("Deep linking to the Perfetto UI"): open the UI in a new window, post 'PING' until it
// answers 'PONG', then post {perfetto: {buffer, title, fileName, url}}. The bytes go from
// this browser to that window only; nothing is uploaded anywhere.
(function () {
  'use strict';

  function note(el, text) {
    if (!el) return;
    el.textContent = text;
    el.hidden = false;
  }

  function open(button) {
    var origin = button.dataset.perfettoOrigin || 'https://ui.perfetto.dev';
    var status = document.getElementById(button.dataset.noteId || 'perfetto-note');
    // Opened before the download starts, while the click still counts as the
    // person's own action; later, browsers treat it as an unwanted popup.
    var ui = window.open(origin + '/#!/', '_blank');
    if (!ui) {
      note(status, 'The browser blocked the Perfetto window. Allow pop-ups for this ' +
        'site and press the button again, or download the original and open it at ' +
        origin + '.');
      return;
    }
    note(status, 'Fetching the trace…');
    fetch(button.dataset.traceUrl, { credentials: 'same-origin' })
      .then(function (response) {
        if (!response.ok) throw new Error('the download answered ' + response.status);
        return response.arrayBuffer();
      })
      .then(function (buffer) {
        note(status, 'Waiting for the Perfetto UI to load…');
        var tries = 0;
        var timer = null;
        function onMessage(event) {
          if (event.source !== ui || event.data !== 'PONG') return;
          window.clearInterval(timer);
          window.removeEventListener('message', onMessage);
          ui.postMessage({
            perfetto: {
              buffer: buffer,
              title: button.dataset.traceTitle || 'trace',
              fileName: button.dataset.traceFile || undefined,
              url: window.location.href
            }
          }, origin);
          note(status, 'Sent to the Perfetto UI (' + buffer.byteLength + ' bytes).');
        }
        window.addEventListener('message', onMessage);
        timer = window.setInterval(function () {
          tries += 1;
          if (ui.closed || tries > 120) {
            window.clearInterval(timer);
            window.removeEventListener('message', onMessage);
            note(status, ui.closed
              ? 'The Perfetto window was closed before the trace was sent.'
              : 'The Perfetto UI did not answer within a minute; download the original ' +
                'and open it there instead.');
            return;
          }
          ui.postMessage('PING', origin);
        }, 500);
      })
      .catch(function (error) {
        note(status, 'Could not fetch the trace: ' + error.message + '.');
      });
  }

  document.addEventListener('click', function (event) {
    var button = event.target.closest('[data-perfetto-open]');
    if (!button) return;
    event.preventDefault();
    open(button);
  });
})();
