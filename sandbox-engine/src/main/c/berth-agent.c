/* Placeholder replaced by the guest agent change; see tool-schemas/agent-protocol.md. */
#include <stdio.h>
int main(void) { fputs("berth-agent: not built yet\n", stderr); return 1; }
