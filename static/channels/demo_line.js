// The demo LINE phone (templates/channels/demo_line.html): sends what is written, and follows
// the chat as the bot's replies reach the stand-in LINE API.
const phone = document.querySelector(".phone");
const list = phone.querySelector(".phone-chat");
const dots = phone.querySelector(".phone-loading");
const choices = phone.querySelector(".phone-choices");
const form = phone.querySelector(".phone-form");
const input = form.querySelector("input[name=text]");
const error = phone.querySelector(".phone-error");
let shown = "";

/** Text with its web addresses as links (no HTML from the message is ever parsed). */
function linked(text) {
  const part = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(/https?:\/\/[^\s)）]+/g)) {
    const url = match[0].replace(/[.,;:!?，。；：！？]+$/, ""); // the sentence's, not the link's
    part.append(text.slice(last, match.index));
    const a = document.createElement("a");
    a.href = url;
    a.textContent = url;
    part.append(a);
    last = match.index + url.length;
  }
  part.append(text.slice(last));
  return part;
}

function render(chat) {
  const key = JSON.stringify(chat);
  if (key === shown) return;
  shown = key;
  list.replaceChildren(
    ...chat.messages.map((message) => {
      const item = document.createElement("li");
      item.className = `bubble ${message.side}`;
      item.append(linked(message.text));
      return item;
    })
  );
  const last = chat.messages[chat.messages.length - 1];
  choices.replaceChildren(
    ...(last && last.side === "bot" ? last.choices : []).map((choice) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = choice;
      button.addEventListener("click", () => send(choice));
      return button;
    })
  );
  list.lastElementChild?.scrollIntoView({ block: "end" });
}

async function follow() {
  try {
    const answer = await fetch(phone.dataset.chatUrl, { headers: { Accept: "application/json" } });
    if (answer.ok) {
      const chat = await answer.json();
      dots.hidden = !chat.loading;
      render(chat);
    }
  } finally {
    setTimeout(follow, 700);
  }
}

async function send(text) {
  error.hidden = true;
  const body = new FormData(form);
  body.set("text", text);
  input.value = "";
  const answer = await fetch(phone.dataset.sendUrl, { method: "POST", body });
  if (!answer.ok) {
    const problem = await answer.json().catch(() => ({}));
    error.textContent = problem.error?.message || `${answer.status}`;
    error.hidden = false;
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (input.value.trim()) send(input.value.trim());
});
follow();
