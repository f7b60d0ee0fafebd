/* A shared library that is not an opreg plugin: no entry point. */
int not_a_plugin(int x);
__attribute__((visibility("default"))) int not_a_plugin(int x) {
    return x + 1;
}
