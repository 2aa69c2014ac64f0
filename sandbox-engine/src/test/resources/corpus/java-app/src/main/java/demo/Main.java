package demo;
public class Main {
    public static String greeting(String name) { return "Hello from " + org.apache.commons.lang3.StringUtils.capitalize(name); }
    public static void main(String[] a) { System.out.println(greeting("berth")); }
}
