"""Built-in tool implementations. Each is an async function `(ctx, **arguments) -> ToolResult`
named by a `tools.d/NAME.yaml` manifest (`implementation: {python: flowrun.tools.MODULE:FUNC}`)."""
