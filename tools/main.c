#include <stdio.h>
int main(void) { puts("hyperpar"); return 0; }
