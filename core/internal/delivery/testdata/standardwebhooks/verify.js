// Reads one JSON case per line on stdin, {secret, body, headers}, and
// prints one line per case: "ok" when the Standard Webhooks verifier
// accepts the delivery with that secret, else "fail <reason>".
const { Webhook } = require("standardwebhooks");
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const c = JSON.parse(line);
  try {
    new Webhook(c.secret).verify(c.body, c.headers);
    console.log("ok");
  } catch (e) {
    console.log("fail " + String(e.message || e).replace(/\s+/g, " "));
  }
});
