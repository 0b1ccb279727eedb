"""The bench's MCP Python SDK server: one tool, answered at once, failing
when asked to (as a tool error with a templated text), over stdio."""
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("bench-sdk")


@server.tool()
def get_forecast(city: str, days: int, fail: bool = False) -> str:
    """The forecast for a city."""
    if fail:
        raise ToolError(f"no forecast for city '{city}' in {days} days")
    return "sunny"


if __name__ == "__main__":
    server.run()
