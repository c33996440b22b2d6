// Runs before first paint (a classic script in <head>): apply the remembered theme and
// expert-detail choice so the page never flashes the other one.
try {
  const theme = localStorage.getItem("theme");
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  if (localStorage.getItem("showExperts") === "0") {
    document.documentElement.classList.add("hide-experts");
  }
} catch {
  /* storage blocked: follow the system theme */
}
