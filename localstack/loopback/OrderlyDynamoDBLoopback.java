import java.lang.reflect.Field;

import org.eclipse.jetty.server.AbstractNetworkConnector;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;

import software.amazon.dynamodb.services.local.main.CommandLineInput;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts DynamoDB Local as its own main class (ServerRunner) does, with the
 * same arguments, but listening on one address instead of every interface:
 * DynamoDB Local has no option for it, and its Jetty server binds the
 * wildcard address. The address is the system property orderly.dynamodb.host
 * (default 127.0.0.1).
 *
 * The Jetty server is a private field of DynamoDBProxyServer; if a release
 * renames it or changes its connectors, this fails at start, loudly, rather
 * than listening everywhere.
 */
public final class OrderlyDynamoDBLoopback {
    public static void main(String[] args) throws Exception {
        String host = System.getProperty("orderly.dynamodb.host", "127.0.0.1");
        if (!new CommandLineInput(args).init()) {
            return; // -help or -version: printed
        }
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server jetty = (Server) field.get(proxy);
        Connector[] connectors = jetty.getConnectors();
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local's Jetty server has no connector to bind to " + host);
        }
        for (Connector c : connectors) {
            if (!(c instanceof AbstractNetworkConnector)) {
                throw new IllegalStateException("DynamoDB Local's connector " + c + " takes no host: cannot bind it to " + host);
            }
            ((AbstractNetworkConnector) c).setHost(host);
        }
        proxy.start();
    }
}
