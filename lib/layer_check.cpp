// The program that proves a module uses only the modules below it
// (lib/CMakeLists.txt): linked with every object of the module and, after
// them, only the archives of lower modules, so a call upwards is an
// undefined reference at build time. It is never run.
int main() { return 0; }
