/* A plugin that dlopen loads at run time: a breakpoint on
 * plugin_function is pending until then. */
int plugin_calls;

int plugin_function(int x)
{
    plugin_calls++;
    return x * 2;
}
