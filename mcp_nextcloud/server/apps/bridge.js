// The MCP Apps bridge (ext-apps 2026-01-26): JSON-RPC 2.0 over postMessage with the host.
// The app asks the host to initialize, then receives the tool result as a notification, and calls
// server tools through the host with tools/call. Everything shown is set with textContent: mail
// text and names are data, never markup.
const bridge = (() => {
  let nextId = 1;
  const pending = new Map();
  const handlers = {};
  function send(message) { window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*"); }
  function request(method, params) {
    const id = nextId++;
    send({ id, method, params });
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }
  window.addEventListener("message", (event) => {
    const msg = event.data;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.id !== undefined && pending.has(msg.id) && !msg.method) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(msg.error.message || "host error")); else resolve(msg.result);
      return;
    }
    const handler = msg.method && handlers[msg.method];
    if (handler) handler(msg.params || {});
  });
  return {
    on(method, fn) { handlers[method] = fn; },
    async connect(name) {
      const result = await request("ui/initialize", {
        protocolVersion: "2026-01-26", appInfo: { name, version: "1" }, appCapabilities: {},
      });
      send({ method: "ui/notifications/initialized", params: {} });
      return result;
    },
    callTool(name, args) { return request("tools/call", { name, arguments: args }); },
  };
})();

// A tool result as the host delivers it: the CallToolResult itself, or wrapped in {result}.
function toolResult(params) { return params && params.result ? params.result : params; }
function payloadOf(result) {
  if (result && result.structuredContent) return result.structuredContent;
  try { return JSON.parse(result.content[0].text); } catch (e) { return null; }
}
function errorText(result) {
  return result && result.isError ? (result.content && result.content[0] && result.content[0].text) || "Error" : null;
}
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
